import createClient from 'openapi-fetch';
import type { Client, ClientOptions, Middleware } from 'openapi-fetch';
import type { Namespace, NamespacePaths, Problem } from './generated';
import { NAMESPACES } from './generated';

export type { Namespace, NamespacePaths, Problem } from './generated';
export { NAMESPACES } from './generated';
export type { Client, Middleware } from 'openapi-fetch';

/** the bearer a request carries: an access token, a module key; a function is asked on every request (refresh) */
export type TokenSource = string | (() => string | undefined | Promise<string | undefined>);

export interface PlatformClientOptions {
  /** the platform's root URL, where its gateway listens (e.g. https://api.example.com); paths start at /v1 */
  baseUrl: string;
  /** sent as `Authorization: Bearer …` unless a request sets its own authorization header */
  token?: TokenSource;
  /** headers of every request (a request's own headers win) */
  headers?: Record<string, string>;
  /** another fetch (tests, retries, tracing); globalThis.fetch by default */
  fetch?: ClientOptions['fetch'];
  /** middleware of every namespace's client (openapi-fetch's onRequest / onResponse / onError) */
  middleware?: Middleware[];
}

/** one typed openapi-fetch client per namespace of the API: `client.money.POST('/v1/wallets', …)` */
export type PlatformClient = { readonly [N in Namespace]: Client<NamespacePaths[N]> };

const bearer = (token: TokenSource): Middleware => ({
  async onRequest({ request }) {
    if (request.headers.has('authorization')) return request;
    const value = typeof token === 'function' ? await token() : token;
    if (value) request.headers.set('authorization', `Bearer ${value}`);
    return request;
  },
});

/**
 * A client of the platform's HTTP API, typed by the OpenAPI documents it serves: one openapi-fetch
 * client per namespace, whose paths, parameters, bodies, answers and problems (RFC 9457) are the
 * documents' (sdk/src/generated/, `npm run sdk:generate`). Each call resolves to
 * `{ data, error, response }`: `data` on a 2xx, `error` (a Problem) otherwise.
 */
export const createPlatformClient = (options: PlatformClientOptions): PlatformClient => {
  const middleware = [...(options.token === undefined ? [] : [bearer(options.token)]), ...(options.middleware ?? [])];
  const client = <N extends Namespace>(): Client<NamespacePaths[N]> => {
    const c = createClient<NamespacePaths[N]>({
      baseUrl: options.baseUrl.replace(/\/+$/, ''),
      ...(options.headers ? { headers: options.headers } : {}),
      ...(options.fetch ? { fetch: options.fetch } : {}),
    });
    c.use(...middleware);
    return c;
  };
  return Object.fromEntries(NAMESPACES.map((n) => [n, client()])) as unknown as PlatformClient;
};

/**
 * A new Idempotency-Key (a UUID v4). Keep it for the retries of one operation: the same key and
 * body answer the stored response (`Idempotent-Replayed: true`), another body 409.
 */
export const idempotencyKey = (): string => globalThis.crypto.randomUUID();

/** whether an answer's body is an RFC 9457 problem (what every error answer of the platform is) */
export const isProblem = (body: unknown): body is Problem =>
  typeof body === 'object' &&
  body !== null &&
  typeof (body as Problem).type === 'string' &&
  typeof (body as Problem).status === 'number';

/** the suffix of a problem's type URI (`{PROBLEMS_BASE_URL}/<suffix>`): `plan-limit-exceeded`, `not-found`, … */
export const problemCode = (problem: Pick<Problem, 'type'>): string =>
  problem.type.slice(problem.type.lastIndexOf('/') + 1);

/**
 * The bodySerializer of a multipart operation (a file upload): each field in the order given, a
 * Blob or File as a file part (a File keeps its name), nothing for an undefined field.
 */
export const formData = (body: Record<string, string | Blob | undefined>): FormData => {
  const form = new FormData();
  for (const [name, value] of Object.entries(body)) if (value !== undefined) form.append(name, value);
  return form;
};
