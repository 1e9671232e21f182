import { setTimeout as sleep } from 'node:timers/promises';
import { commonErrors, isDomainError } from '../../domain/shared/errors';
import type { Clock } from '../runtime/clock';
import { systemClock } from '../runtime/clock';
import type { BreakerOptions, SoftBreakerOptions } from './breaker';
import { CircuitBreaker, defaultBreakerOptions, defaultSoftBreakerOptions, TenantBreaker } from './breaker';

export interface GuardOptions {
  /** the dependency's name in problems and logs (s3, clamav, smtp, billing-grpc, …) */
  name: string;
  /** deadline of one call (GRPC_CALL_TIMEOUT_MS, 5 s) → 504 gateway-timeout */
  timeoutMs: number;
  clock?: Clock;
  breaker?: BreakerOptions;
  softBreaker?: SoftBreakerOptions;
  retryDelayMs?: number;
  /**
   * whether an error is the dependency failing (counted by the breakers, retried when idempotent,
   * answered 502) or an answer of it (a missing object, a refused address: rethrown as it is and
   * counted as a success). Default: every error except DomainErrors.
   */
  isFailure?: (error: unknown) => boolean;
}

export interface GuardedCall {
  /** the verified tenant, for the per-tenant soft breaker */
  tenantId?: string | null;
  /** idempotent calls are retried once after 100 ms; others never */
  idempotent?: boolean;
  /**
   * this call's deadline instead of the guard's; null for none — a call paced by a stream it
   * consumes (an upload's body) has its own per-request timeouts, and the client's pace is no failure
   */
  timeoutMs?: number | null;
}

class DeadlineExceeded extends Error {}

/**
 * The upstream protection of spec 000 (rules 1-4) for any call beyond the process that is not an
 * HTTP proxy call (gRPC, S3, clamd, SMTP, a Kafka producer): a deadline (504), a circuit breaker
 * for the dependency and a soft breaker per tenant (503 without calling), one retry of an
 * idempotent call after 100 ms, and 502 when the dependency fails. The call gets an AbortSignal
 * that fires at the deadline, so clients that support one stop waiting too.
 */
export class Guard {
  readonly breaker: CircuitBreaker;
  readonly tenants: TenantBreaker;
  private readonly clock: Clock;

  constructor(private readonly options: GuardOptions) {
    this.clock = options.clock ?? systemClock;
    this.breaker = new CircuitBreaker(options.breaker ?? defaultBreakerOptions);
    this.tenants = new TenantBreaker(options.softBreaker ?? defaultSoftBreakerOptions);
  }

  async run<T>(fn: (signal: AbortSignal) => Promise<T>, call: GuardedCall = {}): Promise<T> {
    const now = () => this.clock.now().getTime();
    const tenantId = call.tenantId ?? null;
    const { name } = this.options;
    if (tenantId && this.tenants.isolated(tenantId, now()))
      throw commonErrors.serviceUnavailable(`${name} is failing for this tenant; calls are paused for a short while.`);
    const admission = this.breaker.admit(now());
    if (admission === 'reject') throw commonErrors.serviceUnavailable(`${name} is unavailable (circuit open).`);
    const probe = admission === 'probe';
    const isFailure = this.options.isFailure ?? ((e: unknown) => !isDomainError(e));
    for (let attempt = 0; ; attempt += 1) {
      try {
        const value = await this.withDeadline(
          fn,
          call.timeoutMs === undefined ? this.options.timeoutMs : call.timeoutMs,
        );
        this.settle(true, tenantId, probe, 'response');
        return value;
      } catch (error) {
        const timedOut = error instanceof DeadlineExceeded;
        if (!timedOut && !isFailure(error)) {
          this.settle(true, tenantId, probe, 'response');
          throw error;
        }
        if (!timedOut && call.idempotent && !probe && attempt === 0) {
          await sleep(this.options.retryDelayMs ?? 100);
          continue;
        }
        this.settle(false, tenantId, probe, 'transport');
        if (timedOut)
          throw commonErrors.gatewayTimeout(
            `${name} did not answer within ${call.timeoutMs ?? this.options.timeoutMs} ms.`,
          );
        throw Object.assign(commonErrors.badGateway(`${name} failed or is unreachable.`), { cause: error });
      }
    }
  }

  private settle(ok: boolean, tenantId: string | null, probe: boolean, kind: 'transport' | 'response'): void {
    const t = this.clock.now().getTime();
    if (ok) this.breaker.succeeded();
    else this.breaker.failed(t, kind, tenantId, probe);
    if (tenantId) this.tenants.record(tenantId, !ok, t);
  }

  private async withDeadline<T>(fn: (signal: AbortSignal) => Promise<T>, timeoutMs: number | null): Promise<T> {
    const controller = new AbortController();
    if (timeoutMs === null) return fn(controller.signal);
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        controller.abort();
        reject(new DeadlineExceeded());
      }, timeoutMs);
    });
    try {
      return await Promise.race([fn(controller.signal), deadline]);
    } finally {
      clearTimeout(timer);
    }
  }
}
