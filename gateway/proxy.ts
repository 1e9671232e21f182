import { randomBytes } from 'node:crypto';
import '@fastify/websocket';
import { context, propagation } from '@opentelemetry/api';
import { Transform, type Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteHandlerMethod } from 'fastify';
import { pipeBody } from '../infra/http/body-stream';
import { answeringBeforeTheBody } from '../infra/http/drain';
import type { Kernel } from '../infra/kernel';
import { INTERNAL_KEY_PURPOSE, signPrincipal } from './internal-auth';
import type { Upstream } from './upstream/client';

/** request headers a client may pass to the services behind the gateway; everything else stays at the edge */
const FORWARDED = [
  'accept',
  'accept-language',
  'content-type',
  'idempotency-key',
  'if-match',
  'if-none-match',
  'x-correlation-id',
  'user-agent',
  'range',
  'if-range',
];

const RATE_LIMIT_HEADERS = new Set(['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset']);

/** answer headers that belong to one hop, or that the gateway sets itself */
const NOT_RETURNED = new Set([
  'connection',
  'keep-alive',
  'transfer-encoding',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'upgrade',
  'x-ratelimit-limit',
  'x-ratelimit-remaining',
  'x-ratelimit-reset',
  'access-control-allow-origin',
  'vary',
  'access-control-expose-headers',
  'deprecation',
  'sunset',
  'date',
]);

declare module 'fastify' {
  interface FastifyRequest {
    /** the body as received, forwarded byte for byte in split deployment */
    rawBody?: Buffer;
    /** a route declared streamBody: its body as it arrives, for the handler (or the proxy) to consume */
    bodyStream?: Readable;
  }
  interface FastifyContextConfig {
    /**
     * the route reads its body as a stream (uploads): its content-type parser hands the payload over
     * as request.bodyStream, and in split deployment the gateway streams it to the upstream as it
     * arrives instead of buffering it (BODY_LIMIT_BYTES does not apply; the route bounds it)
     */
    streamBody?: boolean;
  }
}

/**
 * Split deployment (`platform serve gateway` with WRITE_API_URL and READ_API_URL): the route
 * plugins are registered at the gateway for their declarations only (access, permission, zod
 * schemas), so authentication, permissions, validation, rate limits and the module check all
 * happen here; each route's handler is replaced by a forward to the upstream role, which gets the
 * verified principal in a signed header (never the client's token, never a client's tenant).
 * Request bodies are buffered for validation (they are bounded by BODY_LIMIT_BYTES) and forwarded
 * byte for byte as they arrived, whatever content-type parser a route declares — except on routes
 * that declare streamBody (uploads), whose body flows to the upstream as it arrives, never held
 * whole; answers stream back as they arrive over keep-alive connections.
 */
export const proxyScope = (instance: FastifyInstance, kernel: Kernel, upstream: Upstream): void => {
  // The bytes are taken on their way to the parser, not by a parser of our own: a plugin replaces
  // parsers in its scope (money's exact JSON parser does), and any parser must still validate here.
  instance.addHook('preParsing', async (request, _reply, payload) =>
    hasBody(request) && !request.routeOptions.config?.streamBody ? keepRawBody(request, payload) : payload,
  );
  const handler = forward(kernel, upstream);
  instance.addHook('onRoute', (route) => {
    // a WebSocket route is served here, where the client's connection is (the real-time socket
    // needs no upstream: it reads the replay buffer and the fan-out bus itself)
    if (route.websocket || route.wsHandler) return;
    route.handler = handler;
  });
};

const forward = (kernel: Kernel, upstream: Upstream): RouteHandlerMethod => {
  const key = kernel.engines.secrets.key(INTERNAL_KEY_PURPOSE);
  return async function (this: unknown, request: FastifyRequest, reply: FastifyReply) {
    const headers: Record<string, string> = {};
    for (const name of [...FORWARDED, ...(request.routeOptions.config?.forwardHeaders ?? [])]) {
      const value = request.headers[name];
      if (typeof value === 'string') headers[name] = value;
    }
    // A public route may read a token itself (MFA verify with a bearer token, completing a provider
    // link): it verifies it with its own authenticator, as in one process. Other routes get the
    // principal the gateway verified, never the token.
    if (request.routeOptions.config?.access === 'public' && typeof request.headers.authorization === 'string')
      headers.authorization = request.headers.authorization;
    // W3C context of the request's server span, the upstream's parent; without tracing the upstream
    // still logs under this request's trace id, marked not sampled: no span of that id exists
    propagation.inject(context.active(), headers);
    headers.traceparent ??= `00-${request.id}-${randomBytes(8).toString('hex')}-00`;
    // the address taken when the request arrived: a client gone by now has no socket address left
    // (request.ip would be undefined, and an undefined header makes the upstream call throw)
    if (request.clientAddress) headers['x-forwarded-for'] = request.clientAddress;
    if (request.principal)
      Object.assign(headers, signPrincipal(key, request.principal, request.id, kernel.clock.now().getTime()));

    const aborter = new AbortController();
    const onClose = () => {
      if (!reply.raw.writableFinished) aborter.abort();
    };
    reply.raw.once('close', onClose);
    // a streamed body goes on at the client's pace; its length (when the client gave one) goes with it
    const streamed = request.routeOptions.config?.streamBody ? request.bodyStream : undefined;
    const length = request.headers['content-length'];
    if (streamed && typeof length === 'string') headers['content-length'] = length;
    let answer;
    try {
      answer = await upstream.call({
        method: request.method,
        path: request.url,
        headers,
        body: streamed ?? rawBodyOf(request),
        tenantId: request.principal?.tenantId ?? null,
        signal: aborter.signal,
      });
    } finally {
      // answered (or failed) before the whole upload arrived: the rest is drained, or the connection ends
      if (streamed) answeringBeforeTheBody(request, reply);
    }
    for (const [name, value] of Object.entries(answer.headers)) {
      // a 429 of the service itself (a limit of its own, such as the verification resend) carries that limit's counters
      if (value !== undefined && (!NOT_RETURNED.has(name) || (answer.status === 429 && RATE_LIMIT_HEADERS.has(name))))
        reply.header(name, value);
    }
    return reply.code(answer.status).send(answer.body);
  };
};

const hasBody = (request: FastifyRequest): boolean =>
  request.headers['transfer-encoding'] !== undefined || Number(request.headers['content-length'] ?? 0) > 0;

/**
 * The payload as it flows to the route's parser, unchanged, its bytes kept in request.rawBody by
 * the time the parser sees the end. The parser still enforces BODY_LIMIT_BYTES and the
 * Content-Length, on the same bytes: nothing is buffered beyond what it reads.
 */
const keepRawBody = (request: FastifyRequest, payload: Readable): Readable => {
  const chunks: Buffer[] = [];
  const kept = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      chunks.push(chunk);
      done(null, chunk);
    },
    flush(done) {
      request.rawBody = Buffer.concat(chunks);
      done();
    },
  });
  return pipeBody(payload, kept);
};

/** the body as received; a route whose parser consumed the payload some other way falls back to a Buffer or text body */
const rawBodyOf = (request: FastifyRequest): Buffer | undefined => {
  if (request.rawBody) return request.rawBody;
  if (Buffer.isBuffer(request.body)) return request.body;
  return typeof request.body === 'string' ? Buffer.from(request.body) : undefined;
};
