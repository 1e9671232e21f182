import { billingErrors } from '../../domain/billing/errors';
import type { PlanInfo } from '../../domain/billing/plan-info';
import type { LimitAnswer, Resource } from '../../domain/billing/resources';
import { isResource } from '../../domain/billing/resources';
import { USAGE_EVENT_TYPES, usageTenantOf } from '../../domain/billing/usage';
import { PLATFORM_TENANT_ID } from '../../domain/identity/constants';
import type { AdmissionRequest } from '../../infra/http/gateway-ports';
import type { CacheEpochs } from '../../infra/cache/epochs';
import type { Kernel } from '../../infra/kernel';
import type { BillingAnswers } from './limits';
import { EVERY_PLAN } from './limits';
import { measureCheckLimit } from '../../infra/observability/metrics';

/**
 * The gateway's side of billing (spec 001, Limit enforcement flow): before a request reaches a
 * handler, the tenant's plan info (cached as plan_info:{tenantId}, BILLING_CACHE_TTL) decides its
 * status rules, and a request that creates a counted resource asks CheckLimit (cached as
 * limit:{tenantId}:{resourceType}, BILLING_LIMIT_CACHE_TTL_SEC). Both caches live in this
 * process's memory (a cached check costs microseconds) and are flushed by billing's events —
 * billing.plan.changed, billing.subscription.changed — and by the usage events of the other
 * services, delivered through the log to every gateway process (kernel.invalidations).
 *
 * An answer fetched just after an invalidation may predate it in billing's own memory (another
 * process learns of the event on its own schedule), so it is kept only SETTLE_TTL_MS.
 *
 * While billing cannot be reached, an answer it gave in the last STALE_LIMIT_MS is used, unless a
 * change billing committed since has made it stale (its epochs, its events). Without one, a
 * mutation is refused with 503 billing-unavailable and Retry-After — the platform cannot tell
 * whether the tenant may write or create, and letting it would silently stop enforcing every plan —
 * while reads pass: reading one's own data harms no plan. Logged once a minute.
 */

/**
 * routes of services that predate route configs: the counted resource each creates. None today:
 * identity's invitations, acceptances and restores are checked by identity itself under the
 * tenant's seat lock — only it knows that a re-sent invitation takes no new seat, which the
 * gateway, seeing the tenant at its limit, would refuse.
 */
export const COUNTED_ROUTES: Readonly<Record<string, Resource>> = {};

const MUTATIONS: ReadonlySet<string> = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const SETTLE_WINDOW_MS = 3_000;
const DAY_MS = 86_400_000;
const SETTLE_TTL_MS = 2_000;
const MAX_ENTRIES = 200_000;
/** how old an answer may be and still stand in for billing while it cannot be reached */
export const STALE_LIMIT_MS = 10 * 60_000;

/** the epochs an answer is served under: a token, null (none could be established), or TTL_ONLY (no epochs: TTL and the log decide) */
type Tag = string | null | typeof TTL_ONLY;
const TTL_ONLY = Symbol('ttl-only');

interface Cached<T> {
  value: T;
  fetchedAt: number;
  expiresAt: number;
  /** the epochs of the tenant's answers when it was fetched (undefined: without epochs) */
  tag?: string;
}

export interface AdmissionOptions {
  planInfoTtlMs: number;
  limitTtlMs: number;
  /**
   * billing's epochs (BillingContext.epochs): an answer is served only while the tenant's epochs
   * are the ones it was fetched under, so a change billing committed (a plan, a subscription, a
   * count) decides the very next request in every process — the log's invalidations come later
   */
  epochs?: CacheEpochs;
}

export class BillingAdmission {
  private readonly plans = new Map<string, Cached<PlanInfo>>();
  private readonly limits = new Map<string, Cached<LimitAnswer>>();
  private readonly inflight = new Map<string, Promise<unknown>>();
  /** per tenant (or '*' for all): answers fetched before this time are kept only SETTLE_TTL_MS */
  private readonly settling = new Map<string, number>();
  private lastWarning = 0;

  constructor(
    private readonly kernel: Kernel,
    private readonly answers: BillingAnswers,
    private readonly options: AdmissionOptions,
  ) {
    kernel.invalidations.on(['billing.subscription.changed'], (event) => this.flushTenant(event.tenantId));
    kernel.invalidations.on(['billing.plan.changed'], () => this.flushAll());
    kernel.invalidations.on(USAGE_EVENT_TYPES, (event) =>
      this.flushLimits(usageTenantOf(event.type, event.tenantId, event.payload)),
    );
  }

  async admit(r: AdmissionRequest): Promise<void> {
    // the platform's own tenant has no plan
    if (r.tenantId === PLATFORM_TENANT_ID) return;
    if (r.namespace === 'billing') return this.admitBilling(r);
    const key = `${r.method} ${r.route}`;
    // one read of the tenant's epochs decides both answers of this request (a counted mutation asks two)
    const tag = await this.tagOf(r.tenantId);
    const info = await this.planInfo(r.tenantId, tag);
    const mutation = MUTATIONS.has(r.method);
    if (!info && mutation) throw billingErrors.billingUnavailable();
    if (info) {
      if (info.status === 'terminated' || info.status === 'canceled')
        throw billingErrors.subscriptionTerminated(info.status);
      // spec 001: read-only for its data; each mutation says whether it writes the tenant's data (route config.whileSuspended)
      if (info.status === 'suspended' && mutation && r.whileSuspended !== 'allowed')
        throw billingErrors.subscriptionSuspended();
    }
    const counted = r.counts ?? COUNTED_ROUTES[key];
    if (counted && isResource(counted) && mutation) {
      const answer = await this.checkLimit(r.tenantId, counted, tag);
      if (!answer) throw billingErrors.billingUnavailable();
      if (!answer.allowed) throw billingErrors.planLimitExceeded(counted, answer.currentUsage, answer.limit);
    }
  }

  /**
   * Billing's own routes: a blocked tenant still reads its subscription (why it is blocked), and a
   * canceled one chooses a plan again — its way back. A terminated one does not: it returns only
   * through the platform owner's recovery, so its billing mutations are 402 like every request.
   * Without an answer they pass: billing's own commands decide on its own state (a terminated
   * tenant's new subscription is refused there), and they are the way out of a blocked status.
   */
  private async admitBilling(r: AdmissionRequest): Promise<void> {
    if (!MUTATIONS.has(r.method)) return;
    const info = await this.planInfo(r.tenantId);
    if (info?.status === 'terminated') throw billingErrors.subscriptionTerminated('terminated');
  }

  /** the tenant's ceiling of requests per minute (its plan's requestsPerMinute; null: the configured default) */
  async rateCeiling(tenantId: string): Promise<number | null> {
    const info = await this.planInfo(tenantId);
    return info && info.limits.requestsPerMinute > 0 ? info.limits.requestsPerMinute : null;
  }

  /**
   * tag: the tenant's epochs read for this request (tagOf); read here when not given. An answer is
   * served from memory only under the epochs read after the request arrived.
   */
  async planInfo(tenantId: string, tag?: Tag): Promise<PlanInfo | null> {
    return this.cachedUnder(
      tag === undefined ? await this.tagOf(tenantId) : tag,
      this.plans,
      tenantId,
      tenantId,
      this.options.planInfoTtlMs,
      () => this.answers.planInfo(tenantId),
    );
  }

  async checkLimit(tenantId: string, resource: Resource, tag?: Tag): Promise<LimitAnswer | null> {
    // a day's count is not kept past the day's end (UTC midnight: events_per_day starts again)
    const now = this.now();
    const ttl =
      resource === 'events_per_day'
        ? Math.max(1, Math.min(this.options.limitTtlMs, DAY_MS - (now % DAY_MS)))
        : this.options.limitTtlMs;
    return this.cachedUnder(
      tag === undefined ? await this.tagOf(tenantId) : tag,
      this.limits,
      `${tenantId}:${resource}`,
      tenantId,
      ttl,
      () => measureCheckLimit(() => this.answers.checkLimit(tenantId, resource)),
    );
  }

  flushTenant(tenantId: string): void {
    this.plans.delete(tenantId);
    this.flushLimits(tenantId);
  }

  flushLimits(tenantId: string): void {
    this.settling.set(tenantId, this.now() + SETTLE_WINDOW_MS);
    for (const key of this.limits.keys()) if (key.startsWith(`${tenantId}:`)) this.limits.delete(key);
    for (const key of this.inflight.keys()) if (key.includes(tenantId)) this.inflight.delete(key);
  }

  flushAll(): void {
    this.settling.set('*', this.now() + SETTLE_WINDOW_MS);
    this.plans.clear();
    this.limits.clear();
    this.inflight.clear();
  }

  private now(): number {
    return this.kernel.clock.now().getTime();
  }

  /** the tenant's epochs now (null: none could be established, nothing is served from memory; TTL_ONLY: no epochs) */
  private tagOf(tenantId: string): Promise<Tag> | Tag {
    const epochs = this.options.epochs;
    if (!epochs) return TTL_ONLY;
    return epochs.current([tenantId, EVERY_PLAN]).then(
      (tag) => tag,
      // the shared cache unreachable: entries live to their TTL and the log's invalidations
      () => TTL_ONLY,
    );
  }

  private cachedUnder<T>(
    epochTag: Tag,
    map: Map<string, Cached<T>>,
    key: string,
    tenantId: string,
    ttlMs: number,
    fetch: () => Promise<T>,
  ): Promise<T | null> | T {
    const tag = epochTag === TTL_ONLY ? undefined : epochTag;
    const now = this.now();
    const hit = map.get(key);
    if (hit && now < hit.expiresAt && tag !== null && (tag === undefined || hit.tag === tag)) return hit.value;
    const flightKey = `${map === (this.plans as Map<string, unknown>) ? 'p' : 'l'}:${key}:${tag ?? ''}`;
    let flight = this.inflight.get(flightKey) as Promise<T | null> | undefined;
    if (!flight) {
      flight = fetch()
        .then(
          (value) => {
            if (this.inflight.get(flightKey) === flight) {
              const settlingUntil = Math.max(this.settling.get(tenantId) ?? 0, this.settling.get('*') ?? 0);
              if (map.size >= MAX_ENTRIES) map.clear();
              const expiresAt = now + (now < settlingUntil ? Math.min(ttlMs, SETTLE_TTL_MS) : ttlMs);
              if (tag !== null) map.set(key, { value, fetchedAt: now, expiresAt, tag });
            }
            return value;
          },
          (error: unknown) => {
            if (now - this.lastWarning > 60_000) {
              this.lastWarning = now;
              this.kernel.logger.warn(
                { err: error },
                `billing unreachable: its answers of the last ${STALE_LIMIT_MS / 60_000} min stand in; mutations without one are refused (503 billing-unavailable)`,
              );
            }
            // an answer billing's epochs have since made stale (a committed change) does not stand in
            const standsIn = hit && now - hit.fetchedAt <= STALE_LIMIT_MS && (!tag || hit.tag === tag);
            return standsIn ? hit.value : null;
          },
        )
        .finally(() => {
          if (this.inflight.get(flightKey) === flight) this.inflight.delete(flightKey);
        });
      this.inflight.set(flightKey, flight);
    }
    return flight;
  }
}
