/**
 * Every refusal of the platform is a DomainError: a status, the stable problem-type suffix of the
 * specification, and a human detail. The edge maps it to an RFC 9457 problem in one place.
 * Each context declares its errors once, in its own catalog (see defineErrors).
 */
export interface FieldError {
  field: string;
  message: string;
  code?: string;
}

export interface ProblemSpec {
  status: number;
  suffix: string;
  title: string;
  detail?: string;
  /** validation errors, rendered as errors[] */
  errors?: FieldError[];
  /** extension members added to the problem body (for example retryAfter, mfa_token) */
  extensions?: Record<string, unknown>;
  /** response headers that belong to the problem (for example Retry-After) */
  headers?: Record<string, string>;
}

export class DomainError extends Error {
  readonly status: number;
  readonly suffix: string;
  readonly title: string;
  readonly detail: string;
  readonly errors?: FieldError[];
  readonly extensions?: Record<string, unknown>;
  readonly headers?: Record<string, string>;

  constructor(spec: ProblemSpec) {
    super(spec.detail ?? spec.title);
    this.name = 'DomainError';
    this.status = spec.status;
    this.suffix = spec.suffix;
    this.title = spec.title;
    this.detail = spec.detail ?? spec.title;
    this.errors = spec.errors;
    this.extensions = spec.extensions;
    this.headers = spec.headers;
  }
}

export const isDomainError = (e: unknown): e is DomainError => e instanceof DomainError;

type Factory = (...args: never[]) => ProblemSpec;

/** A catalog: named factories of problem specs, turned into functions that build DomainErrors. */
export const defineErrors = <C extends Record<string, Factory>>(
  catalog: C,
): { [K in keyof C]: (...args: Parameters<C[K]>) => DomainError } =>
  Object.fromEntries(
    Object.entries(catalog).map(([name, factory]) => [name, (...args: never[]) => new DomainError(factory(...args))]),
  ) as never;

/** Errors every context may raise; the statuses and suffixes of spec document 000. */
/** the header of a 503 answered by a process that is starting or draining (commonErrors.notReady) */
export const NOT_READY_HEADER = 'x-platform-not-ready';

export const commonErrors = defineErrors({
  validation: (errors: FieldError[], detail = 'The request is not valid.') => ({
    status: 400,
    suffix: 'validation-error',
    title: 'Validation failed',
    detail,
    errors,
  }),
  badRequest: (detail: string) => ({ status: 400, suffix: 'bad-request', title: 'Bad request', detail }),
  unauthorized: (detail = 'A valid access token is required.') => ({
    status: 401,
    suffix: 'unauthorized',
    title: 'Unauthorized',
    detail,
  }),
  forbidden: (detail = 'The permission required for this operation is missing.') => ({
    status: 403,
    suffix: 'forbidden',
    title: 'Forbidden',
    detail,
  }),
  notFound: (detail = 'The resource does not exist.') => ({
    status: 404,
    suffix: 'not-found',
    title: 'Not found',
    detail,
  }),
  methodNotAllowed: (method: string, allowed: string[]) => ({
    status: 405,
    suffix: 'method-not-allowed',
    title: 'Method not allowed',
    detail: `${method} is not allowed here; allowed: ${allowed.join(', ')}.`,
    headers: { Allow: allowed.join(', ') },
  }),
  conflict: (detail: string) => ({ status: 409, suffix: 'conflict', title: 'Conflict', detail }),
  payloadTooLarge: (limitBytes: number) => ({
    status: 413,
    suffix: 'payload-too-large',
    title: 'Payload too large',
    detail: `The request body exceeds ${limitBytes} bytes.`,
  }),
  unsupportedMediaType: (contentType: string | undefined) => ({
    status: 415,
    suffix: 'unsupported-media-type',
    title: 'Unsupported media type',
    detail: `Content-Type ${contentType === undefined ? '(none)' : JSON.stringify(contentType)} is not accepted; send application/json.`,
  }),
  rateLimited: (retryAfterSeconds: number) => ({
    status: 429,
    suffix: 'rate-limit-exceeded',
    title: 'Too many requests',
    detail: `Retry after ${retryAfterSeconds} s.`,
    extensions: { retryAfter: retryAfterSeconds },
    headers: { 'Retry-After': String(retryAfterSeconds) },
  }),
  internal: () => ({
    status: 500,
    suffix: 'internal-error',
    title: 'Internal error',
    detail: 'An unexpected error occurred.',
  }),
  // Every 502 and 503 says when to come back (Retry-After, and retryAfter in the body): a client
  // that knows the refusal is temporary retries instead of giving up or hammering.
  badGateway: (detail = 'The upstream service failed or is unreachable.', retryAfterSeconds = 2) => ({
    status: 502,
    suffix: 'bad-gateway',
    title: 'Bad gateway',
    detail,
    extensions: { retryAfter: retryAfterSeconds },
    headers: { 'Retry-After': String(retryAfterSeconds) },
  }),
  serviceUnavailable: (detail = 'The service is temporarily unavailable.', retryAfterSeconds = 5) => ({
    status: 503,
    suffix: 'service-unavailable',
    title: 'Service unavailable',
    detail,
    extensions: { retryAfter: retryAfterSeconds },
    headers: { 'Retry-After': String(retryAfterSeconds) },
  }),
  /** the process is starting or draining: nothing about the request was judged, so nothing is refused for its own sake */
  notReady: (reason: string) => ({
    status: 503,
    suffix: 'service-unavailable',
    title: 'Service unavailable',
    detail: `The service is not ready (${reason}); retry shortly.`,
    extensions: { retryAfter: 1 },
    // tells a gateway in front that the request was not judged: it may send it again, and no breaker counts it
    headers: { 'Retry-After': '1', [NOT_READY_HEADER]: 'true' },
  }),
  /** too much work queued (database connections, password hashing): retry shortly */
  overloaded: (retryAfterSeconds: number) => ({
    status: 503,
    suffix: 'service-unavailable',
    title: 'Service unavailable',
    detail: `The service is busy; retry after ${retryAfterSeconds} s.`,
    extensions: { retryAfter: retryAfterSeconds },
    headers: { 'Retry-After': String(retryAfterSeconds) },
  }),
  gatewayTimeout: (detail = 'The upstream deadline was exceeded.') => ({
    status: 504,
    suffix: 'gateway-timeout',
    title: 'Gateway timeout',
    detail,
  }),
});
