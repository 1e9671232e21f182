/** the API's instants (since, until, page tokens): the shared rules of domain/shared/instant.ts */
export { Instant } from '../../domain/shared/instant';
