import { Agent as HttpAgent, request as httpRequest, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { commonErrors, NOT_READY_HEADER } from '../../domain/shared/errors';
import type { Clock } from '../../infra/runtime/clock';
import { systemClock } from '../../infra/runtime/clock';
import type { BreakerOptions, FailureKind, SoftBreakerOptions } from '../../infra/resilience/breaker';
import {
  CircuitBreaker,
  defaultBreakerOptions,
  defaultSoftBreakerOptions,
  TenantBreaker,
} from '../../infra/resilience/breaker';

export interface UpstreamOptions {
  /** the deadline of one call until the answer's headers arrive (GRPC_CALL_TIMEOUT_MS, 5 s) */
  timeoutMs: number;
  clock?: Clock;
  maxSockets?: number;
  /**
   * how long a request the upstream never received is sent again — the upstream refused the
   * connection, or answered that it is starting or draining (NOT_READY_HEADER) — before the client
   * gets 503 with Retry-After (UPSTREAM_UNDELIVERED_RETRY_MS, 3 s): a role restarting within it is
   * not seen by clients at all
   */
  undeliveredRetryMs?: number;
  /** backoff before the one retry of an idempotent GET (100 ms) */
  retryDelayMs?: number;
  breaker?: BreakerOptions;
  softBreaker?: SoftBreakerOptions;
}

export interface UpstreamCall {
  method: string;
  /** path and query, e.g. /v1/tally/counters?page_size=5 */
  path: string;
  headers: Record<string, string>;
  /** a Buffer, or a stream sent as it is read (never retried; the deadline starts once it is sent) */
  body?: Buffer | Readable;
  /** the verified tenant, for the soft breaker; null for anonymous calls */
  tenantId: string | null;
  /** aborts the call when the client goes away */
  signal?: AbortSignal;
}

export interface UpstreamAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  /** the body, streamed; the caller must consume or destroy it */
  body: IncomingMessage;
}

/** the wait for an answer once a streamed body (an upload) is sent: the upstream stores the rest of it first */
const STREAMED_BODY_ANSWER_MS = 60_000;

const UNDELIVERED_BACKOFF_MS = [25, 50, 100, 200, 250];

/** the upstream did not take the request: nothing ran there, so sending it again is safe for every method */
type Undelivered = 'refused' | 'not-ready';

class CallFailed extends Error {
  constructor(
    readonly kind: FailureKind | 'timeout' | Undelivered,
    readonly answer: UpstreamAnswer | null,
    cause?: unknown,
    /** the deadline that passed, for a timeout */
    readonly deadlineMs = 0,
  ) {
    super(kind, { cause });
  }
}

const RETRIED = new Set(['GET', 'HEAD']);

/**
 * Whether a request that failed before any answer certainly did nothing upstream: the connection
 * was refused; or a kept-alive connection the upstream had just closed (it drains when stopping)
 * was reset under it, and the request is one the upstream recognizes when it comes again (a GET,
 * or a mutation with its Idempotency-Key) — the rule of Go's http.Transport, since a reset of a
 * reused connection cannot tell "closed before it arrived" from "crashed while running it".
 */
const undelivered = (call: UpstreamCall, req: { reusedSocket: boolean }, error: Error): boolean => {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'ECONNREFUSED') return true;
  const replayable = RETRIED.has(call.method) || call.headers['idempotency-key'] !== undefined;
  return req.reusedSocket && replayable && (code === 'ECONNRESET' || code === 'EPIPE');
};

const isStream = (body: UpstreamCall['body']): body is Readable => body !== undefined && !Buffer.isBuffer(body);

/**
 * A guarded HTTP upstream (spec 000 behaviour rules 1-4): keep-alive connections, a deadline
 * (504), a circuit breaker for the whole upstream and a soft breaker per tenant (503 without a
 * downstream call), one retry of an idempotent GET after 100 ms (never POST, PATCH, PUT or
 * DELETE), and 502 when the upstream fails. A 5xx answer that is a problem document of the
 * platform passes through as it is; any other 5xx becomes 502. A request the upstream did not
 * take — a refused connection, a 503 of a role starting or draining — is no failure and was
 * never executed: it is sent again, whatever its method, for up to undeliveredRetryMs, then 503
 * with Retry-After, and no breaker counts it (a deliberate restart must not open the circuit).
 */
export class Upstream {
  readonly breaker: CircuitBreaker;
  readonly tenants: TenantBreaker;
  private readonly base: URL;
  private readonly agent: HttpAgent;
  private readonly clock: Clock;

  constructor(
    readonly name: string,
    baseUrl: string,
    private readonly options: UpstreamOptions,
  ) {
    this.base = new URL(baseUrl);
    const agentOptions = {
      keepAlive: true,
      keepAliveMsecs: 1000,
      maxSockets: options.maxSockets ?? 128,
      maxFreeSockets: 64,
      scheduling: 'lifo' as const,
    };
    this.agent = this.base.protocol === 'https:' ? new HttpsAgent(agentOptions) : new HttpAgent(agentOptions);
    this.clock = options.clock ?? systemClock;
    this.breaker = new CircuitBreaker(options.breaker ?? defaultBreakerOptions);
    this.tenants = new TenantBreaker(options.softBreaker ?? defaultSoftBreakerOptions);
  }

  async call(call: UpstreamCall): Promise<UpstreamAnswer> {
    const now = () => this.clock.now().getTime();
    if (call.tenantId && this.tenants.isolated(call.tenantId, now())) {
      throw commonErrors.serviceUnavailable(
        `The ${this.name} service is failing for this tenant; calls are paused for a short while.`,
      );
    }
    const admission = this.breaker.admit(now());
    if (admission === 'reject')
      throw commonErrors.serviceUnavailable(
        `The ${this.name} service is unavailable (circuit open).`,
        Math.max(1, Math.ceil(this.breaker.msUntilProbe(now()) / 1000)),
      );
    const probe = admission === 'probe';
    const retries = RETRIED.has(call.method) && !probe && !isStream(call.body) ? 1 : 0;
    // real time, not the platform's clock: this is how long the client waits
    const undeliveredUntil = Date.now() + (this.options.undeliveredRetryMs ?? 3_000);
    let resends = 0;
    // Breakers count calls, not attempts: a GET whose retry succeeds is a success.
    for (let attempt = 0; ; attempt += 1) {
      try {
        const answer = await this.attempt(call);
        this.breaker.succeeded();
        if (call.tenantId) this.tenants.record(call.tenantId, false, now());
        return answer;
      } catch (error) {
        if (!(error instanceof CallFailed)) {
          if (probe) this.breaker.failed(now(), 'transport', call.tenantId, true);
          throw error;
        }
        if (call.signal?.aborted) {
          error.answer?.body.destroy();
          if (probe) this.breaker.failed(now(), 'transport', call.tenantId, true);
          throw commonErrors.badGateway('The client went away.');
        }
        if (error.kind === 'refused' || error.kind === 'not-ready') {
          // a restart, not a failure: no breaker counts it (a probe stays inconclusive: the circuit reopens)
          error.answer?.body.resume();
          if (!isStream(call.body) && Date.now() < undeliveredUntil && !call.signal?.aborted) {
            await sleep(UNDELIVERED_BACKOFF_MS[Math.min(resends, UNDELIVERED_BACKOFF_MS.length - 1)]);
            resends += 1;
            attempt -= 1;
            continue;
          }
          if (probe) this.breaker.failed(now(), 'transport', call.tenantId, true);
          throw commonErrors.serviceUnavailable(
            error.kind === 'refused'
              ? `The ${this.name} service is not accepting connections (restarting?).`
              : `The ${this.name} service is starting or shutting down.`,
            1,
          );
        }
        if (attempt < retries && error.kind !== 'timeout') {
          error.answer?.body.resume(); // drain, so the connection goes back to the pool
          await sleep(this.options.retryDelayMs ?? 100);
          continue;
        }
        this.breaker.failed(now(), error.kind === 'timeout' ? 'transport' : error.kind, call.tenantId, probe);
        if (call.tenantId) this.tenants.record(call.tenantId, true, now());
        return this.finalAnswer(error);
      }
    }
  }

  close(): void {
    this.agent.destroy();
  }

  /** the answer of a call that failed for good: the upstream's own problem document, or a 502/504 */
  private finalAnswer(error: CallFailed): UpstreamAnswer {
    if (error.kind === 'timeout')
      throw commonErrors.gatewayTimeout(`The ${this.name} service did not answer within ${error.deadlineMs} ms.`);
    const answer = error.answer;
    if (answer && String(answer.headers['content-type'] ?? '').startsWith('application/problem+json')) return answer;
    answer?.body.resume();
    throw commonErrors.badGateway(
      answer ? `The ${this.name} service failed (${answer.status}).` : `The ${this.name} service is unreachable.`,
    );
  }

  private attempt(call: UpstreamCall): Promise<UpstreamAnswer> {
    return new Promise<UpstreamAnswer>((resolve, reject) => {
      const send = this.base.protocol === 'https:' ? httpsRequest : httpRequest;
      const url = new URL(call.path, this.base);
      const headers: Record<string, string> = { ...call.headers };
      const streamed = isStream(call.body) ? call.body : null;
      if (Buffer.isBuffer(call.body)) headers['content-length'] = String(call.body.length);
      let settled = false;
      let timer: NodeJS.Timeout | undefined;
      const req = send(url, { method: call.method, headers, agent: this.agent, signal: call.signal }, (res) => {
        clearTimeout(timer);
        settled = true;
        if (streamed && !streamed.readableEnded) {
          // answered before the whole body was sent (a refusal): the rest is not the upstream's to
          // read any more (node stops relaying 'drain' on such a request, so the pipe would stall);
          // the caller drains or closes what the client still sends, and this connection is not
          // reused once the answer has been read
          streamed.unpipe(req);
          res.once('end', () => req.destroy());
        }
        const answer = { status: res.statusCode ?? 502, headers: res.headers, body: res };
        if (answer.status === 503 && answer.headers[NOT_READY_HEADER]) reject(new CallFailed('not-ready', answer));
        else if (answer.status >= 500) reject(new CallFailed('response', answer));
        else resolve(answer);
      });
      const startDeadline = (ms: number) => {
        timer = setTimeout(() => {
          if (settled) return;
          settled = true;
          reject(new CallFailed('timeout', null, undefined, ms));
          req.destroy();
        }, ms);
      };
      req.on('error', (error) => {
        clearTimeout(timer);
        if (settled) return;
        settled = true;
        reject(new CallFailed(undelivered(call, req, error) ? 'refused' : 'transport', null, error));
      });
      if (!streamed) {
        startDeadline(this.options.timeoutMs);
        req.end(call.body);
        return;
      }
      // the deadline covers the wait for the answer once the body is sent, not the client's upload;
      // that answer comes once the upstream has stored the rest of the body (an object's last part
      // and its completion: seconds for a large file on a busy store), so it is not a call's 5 s.
      // A client that goes away ends the upstream request with it
      req.on('finish', () => startDeadline(Math.max(this.options.timeoutMs, STREAMED_BODY_ANSWER_MS)));
      streamed.on('error', (error) => req.destroy(error));
      streamed.pipe(req);
    });
  }
}
