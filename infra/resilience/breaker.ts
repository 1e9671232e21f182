/**
 * Circuit breaking of spec 000 (behaviour rules 1 and 2). Time comes from the caller (an injected
 * clock), so tests step over the 30 s and 60 s windows instead of waiting for them.
 */
export interface BreakerOptions {
  /** consecutive failures that open the circuit (5) */
  threshold: number;
  /** the failures must fall within this span (30 s) */
  windowMs: number;
  /** how long the circuit stays open before one probe may pass (30 s) */
  openMs: number;
}

export const defaultBreakerOptions: BreakerOptions = { threshold: 5, windowMs: 30_000, openMs: 30_000 };

export type Admission = 'call' | 'probe' | 'reject';

/** why a call failed: the upstream could not be reached or timed out, or it answered 5xx */
export type FailureKind = 'transport' | 'response';

/**
 * One upstream's breaker: closed → (5 consecutive failures within 30 s) → open → (30 s) →
 * half-open: exactly one probe passes while the rest are refused; its success closes the
 * circuit, its failure opens it for another 30 s.
 *
 * One tenant's failures never open the circuit for all tenants (rule 2): a streak made only of
 * 5xx answers to a single tenant is left to that tenant's soft breaker. Transport failures (the
 * upstream unreachable or silent) and 5xx answers to several tenants open it.
 */
export class CircuitBreaker {
  private state: 'closed' | 'open' | 'half-open' = 'closed';
  private streak = 0;
  private streakStartedAt = 0;
  private streakTenants = new Set<string>();
  private streakTransport = false;
  private openUntil = 0;

  constructor(private readonly options: BreakerOptions = defaultBreakerOptions) {}

  get status(): 'closed' | 'open' | 'half-open' {
    return this.state;
  }

  admit(now: number): Admission {
    if (this.state === 'closed') return 'call';
    if (this.state === 'open' && now >= this.openUntil) {
      this.state = 'half-open';
      return 'probe';
    }
    return 'reject'; // open, or half-open with its probe in flight
  }

  /** how long until an open circuit lets its probe through (0 when it would now) */
  msUntilProbe(now: number): number {
    return this.state === 'open' ? Math.max(0, this.openUntil - now) : 0;
  }

  succeeded(): void {
    this.state = 'closed';
    this.resetStreak();
  }

  failed(now: number, kind: FailureKind, tenantId: string | null, probe: boolean): void {
    if (probe || this.state === 'half-open') {
      this.open(now);
      return;
    }
    if (this.state === 'open') return;
    if (this.streak === 0 || now - this.streakStartedAt > this.options.windowMs) {
      this.resetStreak();
      this.streakStartedAt = now;
    }
    this.streak += 1;
    this.streakTenants.add(tenantId ?? '(anonymous)');
    if (kind === 'transport' || tenantId === null) this.streakTransport = true;
    const wholeUpstream = this.streakTransport || this.streakTenants.size > 1;
    if (this.streak >= this.options.threshold && wholeUpstream) this.open(now);
  }

  private open(now: number): void {
    this.state = 'open';
    this.openUntil = now + this.options.openMs;
    this.resetStreak();
  }

  private resetStreak(): void {
    this.streak = 0;
    this.streakTenants = new Set();
    this.streakTransport = false;
  }
}

export interface SoftBreakerOptions {
  /** error rate above which a tenant is isolated (0.5) */
  errorRate: number;
  /** span of the rate (60 s) */
  windowMs: number;
  /** calls in the window before the rate counts, so one failed call does not isolate a tenant */
  minCalls: number;
}

export const defaultSoftBreakerOptions: SoftBreakerOptions = { errorRate: 0.5, windowMs: 60_000, minCalls: 10 };

const SLOTS = 6;

interface TenantWindow {
  /** start of each slot (windowMs / 6 wide) and its counts */
  slotStart: number[];
  calls: number[];
  errors: number[];
  lastSeen: number;
}

/**
 * Per-tenant soft breaker: the error rate of a tenant's calls to one upstream over a sliding 60 s
 * (six 10 s slots). Above 50 % the tenant is isolated: its calls are refused without a downstream
 * call until enough failed slots age out, while other tenants keep calling.
 */
export class TenantBreaker {
  private readonly tenants = new Map<string, TenantWindow>();
  private lastSweep = 0;

  constructor(private readonly options: SoftBreakerOptions = defaultSoftBreakerOptions) {}

  isolated(tenantId: string, now: number): boolean {
    const w = this.tenants.get(tenantId);
    if (!w) return false;
    const { calls, errors } = this.totals(w, now);
    return calls >= this.options.minCalls && errors / calls > this.options.errorRate;
  }

  record(tenantId: string, failed: boolean, now: number): void {
    this.sweep(now);
    let w = this.tenants.get(tenantId);
    if (!w) {
      w = {
        slotStart: new Array<number>(SLOTS).fill(Number.NEGATIVE_INFINITY),
        calls: new Array<number>(SLOTS).fill(0),
        errors: new Array<number>(SLOTS).fill(0),
        lastSeen: now,
      };
      this.tenants.set(tenantId, w);
    }
    const width = this.options.windowMs / SLOTS;
    const start = Math.floor(now / width) * width;
    const i = Math.floor(now / width) % SLOTS;
    if (w.slotStart[i] !== start) {
      w.slotStart[i] = start;
      w.calls[i] = 0;
      w.errors[i] = 0;
    }
    w.calls[i]! += 1;
    if (failed) w.errors[i]! += 1;
    w.lastSeen = now;
  }

  private totals(w: TenantWindow, now: number): { calls: number; errors: number } {
    let calls = 0;
    let errors = 0;
    for (let i = 0; i < SLOTS; i += 1) {
      if (now - w.slotStart[i]! < this.options.windowMs) {
        calls += w.calls[i]!;
        errors += w.errors[i]!;
      }
    }
    return { calls, errors };
  }

  /** forgets tenants silent for a whole window, at most once per window */
  private sweep(now: number): void {
    if (now - this.lastSweep < this.options.windowMs) return;
    this.lastSweep = now;
    for (const [tenant, w] of this.tenants) if (now - w.lastSeen >= this.options.windowMs) this.tenants.delete(tenant);
  }
}
