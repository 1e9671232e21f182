import { randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors, isResponseSerializationError } from 'fastify-type-provider-zod';
import type { FieldError } from '../../domain/shared/errors';
import { commonErrors, DomainError, isDomainError, NOT_READY_HEADER } from '../../domain/shared/errors';
import { instanceOf, PROBLEM_CONTENT_TYPE, sendProblem, toProblem } from './problem';
import { isPoolTimeout } from '../postgres/db';

/**
 * The one place where anything thrown becomes an RFC 9457 problem (DESIGN.md mechanism 7):
 * DomainErrors keep their status and suffix, framework errors get the spec's suffixes, and
 * anything unexpected is logged and answered as 500 internal-error without leaking details.
 */
export const toDomainError = (
  error: unknown,
  bodyLimit: number,
  contentType?: string,
): { domain: DomainError; unexpected: boolean } => {
  if (isDomainError(error)) return { domain: error, unexpected: false };
  if (hasZodFastifySchemaValidationErrors(error)) {
    return {
      domain: commonErrors.validation(error.validation.map((v) => fieldError(v, error.validationContext))),
      unexpected: false,
    };
  }
  if (isResponseSerializationError(error)) return { domain: commonErrors.internal(), unexpected: true };
  // every database connection busy for longer than DATABASE_POOL_WAIT_MS: a load problem, not a bug
  if (isPoolTimeout(error)) return { domain: commonErrors.overloaded(1), unexpected: false };
  const e = error as FastifyError;
  switch (e.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return { domain: commonErrors.payloadTooLarge(bodyLimit), unexpected: false };
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return { domain: commonErrors.unsupportedMediaType(shownContentType(contentType)), unexpected: false };
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return {
        domain: malformed(
          e.code === 'FST_ERR_CTP_EMPTY_JSON_BODY' ? 'The JSON body is empty.' : 'The body is not valid JSON.',
        ),
        unexpected: false,
      };
    default:
      break;
  }
  if (e instanceof SyntaxError || e.statusCode === 400)
    return { domain: malformed('The body is not valid JSON.'), unexpected: false };
  if (e.statusCode === 413) return { domain: commonErrors.payloadTooLarge(bodyLimit), unexpected: false };
  if (e.statusCode === 415)
    return { domain: commonErrors.unsupportedMediaType(shownContentType(contentType)), unexpected: false };
  return { domain: commonErrors.internal(), unexpected: true };
};

/** the received Content-Type as the 415 detail names it: printable ASCII, at most 100 characters */
const shownContentType = (value: string | undefined): string | undefined => {
  if (value === undefined || value.trim() === '') return undefined;
  const printable = value.replace(/[^\x20-\x7e]/g, '?').trim();
  return printable.length > 100 ? `${printable.slice(0, 100)}…` : printable;
};

const malformed = (detail: string) =>
  commonErrors.validation([{ field: 'body', message: detail, code: 'MALFORMED_JSON' }], detail);

type ZodIssueLike = { instancePath?: string; message?: string; keyword?: string; params?: Record<string, unknown> };

const fieldError = (v: ZodIssueLike, context: string | undefined): FieldError => {
  const path = (v.instancePath ?? '').split('/').filter(Boolean).join('.');
  const issue = (v.params as { issue?: { code?: string; path?: unknown[] } } | undefined)?.issue;
  const field = path || (context === 'body' ? 'body' : (context ?? 'request'));
  return { field, message: v.message ?? 'invalid value', code: (issue?.code ?? v.keyword ?? 'invalid').toUpperCase() };
};

export const problemHandler =
  (problemsBaseUrl: string, bodyLimit: number) => (error: unknown, request: FastifyRequest, reply: FastifyReply) => {
    const contentType = request.headers['content-type'];
    const { domain, unexpected } = toDomainError(
      error,
      bodyLimit,
      typeof contentType === 'string' ? contentType : undefined,
    );
    if (unexpected) request.log.error({ err: error }, 'unexpected error');
    // a process starting or draining refuses every request alike: the start and the drain are logged, not each refusal
    else if (domain.headers?.[NOT_READY_HEADER]) request.log.debug(domain.detail);
    else if (domain.status >= 500) request.log.warn({ err: error }, domain.detail);
    return sendProblem(reply, toProblem(domain, problemsBaseUrl, instanceOf(request), request.id), domain.headers);
  };

/**
 * The router's refusals before any route or hook runs (Fastify frameworkErrors): a path that is not
 * valid percent-encoding, a path parameter longer than the router accepts. The instance is not the
 * raw path: a problem never echoes input the platform could not even read.
 */
export const frameworkProblem = (
  reply: FastifyReply,
  error: FastifyError,
  problemsBaseUrl: string,
  traceId: string,
): FastifyReply => {
  const domain =
    error.code === 'FST_ERR_MAX_PARAM_LENGTH'
      ? commonErrors.validation(
          [
            {
              field: 'path',
              message: 'a path segment is longer than any identifier of the platform',
              code: 'TOO_LONG',
            },
          ],
          'A path segment is too long.',
        )
      : error.code === 'FST_ERR_BAD_URL'
        ? commonErrors.validation(
            [{ field: 'path', message: 'the path is not valid percent-encoded UTF-8', code: 'BAD_URL' }],
            'The request path cannot be decoded.',
          )
        : commonErrors.internal();
  return sendProblem(reply, toProblem(domain, problemsBaseUrl, '/', traceId));
};

/**
 * What the HTTP parser refuses before Fastify sees a request (oversized headers, a malformed
 * request line): written to the socket as a problem with the security headers, then closed.
 */
export const rawProblemResponse = (
  error: Error & { code?: string },
  socket: Socket,
  problemsBaseUrl: string,
  headers: Record<string, string>,
): void => {
  // A request already handed to a route whose answer has begun on this socket (its body cut short
  // after the route answered): another answer written over it would garble both; the connection
  // just ends (node's own rule for its default answer).
  // The same holds for an answer still being prepared (a route reading the body, or onSend hooks
  // waiting for the audit record to be durable): Fastify would write its head after ours.
  const inFlight = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage;
  if (error.code === 'ECONNRESET' || socket.destroyed || !socket.writable || inFlight) {
    socket.destroy();
    return;
  }
  const tooLarge = error.code === 'HPE_HEADER_OVERFLOW';
  const domain = tooLarge
    ? {
        status: 431,
        suffix: 'request-header-fields-too-large',
        title: 'Request header fields too large',
        detail: 'The request headers exceed the size the server accepts.',
      }
    : { status: 400, suffix: 'bad-request', title: 'Bad request', detail: 'The request could not be read as HTTP.' };
  const body = JSON.stringify({
    type: `${problemsBaseUrl}/${domain.suffix}`,
    title: domain.title,
    status: domain.status,
    detail: domain.detail,
    instance: '/',
    traceId: randomTraceId(),
  });
  const head = [
    `HTTP/1.1 ${domain.status} ${domain.title}`,
    `Content-Type: ${PROBLEM_CONTENT_TYPE}`,
    `Content-Length: ${Buffer.byteLength(body)}`,
    'Connection: close',
    'Cache-Control: no-store',
    ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
  ];
  socket.end(`${head.join('\r\n')}\r\n\r\n${body}`);
};

const randomTraceId = () => randomBytes(16).toString('hex');
