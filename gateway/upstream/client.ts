import { Agent as HttpAgent, request as httpRequest, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { commonErrors } from '../../domain/shared/errors';
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

class CallFailed extends Error {
  constructor(
    readonly kind: FailureKind | 'timeout',
    readonly answer: UpstreamAnswer | null,
    cause?: unknown,
    /** the deadline that passed, for a timeout */
    readonly deadlineMs = 0,
  ) {
    super(kind, { cause });
  }
}

const RETRIED = new Set(['GET', 'HEAD']);

const isStream = (body: UpstreamCall['body']): body is Readable => body !== undefined && !Buffer.isBuffer(body);

/**
 * A guarded HTTP upstream (spec 000 behaviour rules 1-4): keep-alive connections, a deadline
 * (504), a circuit breaker for the whole upstream and a soft breaker per tenant (503 without a
 * downstream call), one retry of an idempotent GET after 100 ms (never POST, PATCH, PUT or
 * DELETE), and 502 when the upstream cannot be reached. A 5xx answer that is a problem document
 * of the platform passes through as it is; any other 5xx becomes 502.
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
      throw commonErrors.serviceUnavailable(`The ${this.name} service is unavailable (circuit open).`);
    const probe = admission === 'probe';
    const retries = RETRIED.has(call.method) && !probe && !isStream(call.body) ? 1 : 0;
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
        if (answer.status >= 500) reject(new CallFailed('response', answer));
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
        reject(new CallFailed('transport', null, error));
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
