import type { PlanInfo } from '../../domain/billing/plan-info';
import type { LimitAnswer, Resource } from '../../domain/billing/resources';
import { checkLimit, LIMIT_OF } from '../../domain/billing/resources';
import type { Usage } from '../../domain/billing/usage';
import { emptyUsage, utcDay } from '../../domain/billing/usage';
import type { CacheEpochs } from '../../infra/cache/epochs';
import type { KeyValueCache } from '../../infra/cache/port';
import type { People } from '../../infra/people';
import type { Queryable } from '../../infra/postgres/db';
import type { Clock } from '../../infra/runtime/clock';
import { billingErrors } from '../../domain/billing/errors';
import { isResource } from '../../domain/billing/resources';
import { PLATFORM_TENANT_ID } from '../../domain/identity/constants';
import { eventsPublishedToday, loadTenantLimits, usageOf } from './lookups';

/** the questions the gateway asks billing: in process, or over gRPC in split deployment */
export interface BillingAnswers {
  planInfo(tenantId: string): Promise<PlanInfo>;
  checkLimit(tenantId: string, resource: Resource): Promise<LimitAnswer>;
}

interface Entry {
  info: PlanInfo;
  usage: Usage;
  loadedAt: number;
  /** the age from which a call that finds the entry also starts its reload (served meanwhile) */
  refreshAfter: number;
}

/**
 * The layer billing processes share when Redis is configured: each tenant's plan info and usage as
 * one entry, tied to the epochs of the tenant and of all plans (infra/cache/epochs.ts), which every
 * change bumps — so a process whose memory misses asks Redis before the read models, and never
 * gets an entry older than the last change it could know of.
 */
export interface SharedLimits {
  cache: KeyValueCache;
  epochs: CacheEpochs;
  ttlMs: number;
}

interface Stored {
  tag: string;
  /** the UTC day the usage was counted on: events_per_day starts again at midnight, which bumps no epoch */
  day?: string;
  info: PlanInfo;
  usage: Usage;
}

/** the epoch scope of every tenant's answers (a plan changed); a tenant's own scope is its id */
export const EVERY_PLAN = '*';
const sharedKey = (tenantId: string): string => `billing:limits:${tenantId}`;

/**
 * CheckLimit's memory (spec 001: answers in under a millisecond): each tenant's limits and usage,
 * loaded from the read models on first use and dropped whenever an event changes them — billing's
 * own events and the usage events of other services, delivered through the log to every process
 * (commands/billing/context.ts installs the handlers), and by billing's own commands in the process
 * that ran them, right after their commit. A short TTL (maxAgeMs) is the safety net for an
 * invalidation lost while the log was unreachable. With Redis configured, a miss reads the shared
 * entry first (SharedLimits); without it, or while Redis cannot be reached, the read models.
 */
export class LimitBook implements BillingAnswers {
  private readonly entries = new Map<string, Entry>();
  /** loads in flight; a drop removes the tenant's, so a load that started before the drop is not kept */
  private readonly loading = new Map<string, Promise<Entry>>();

  constructor(
    private readonly db: Queryable,
    /** the directory of people: users' pending invitations count as seats */
    readonly people: People,
    private readonly clock: Clock,
    private readonly maxAgeMs = 2_000,
    private readonly shared: SharedLimits | null = null,
  ) {}

  async planInfo(tenantId: string): Promise<PlanInfo> {
    return (await this.entry(tenantId)).info;
  }

  async checkLimit(tenantId: string, resource: Resource): Promise<LimitAnswer> {
    // the day's count moves with every publish and moves no epoch below the limit (commands/events/publish.ts): read as it is now
    const [{ info, usage }, today] = await Promise.all([
      this.entry(tenantId),
      resource === 'events_per_day' ? eventsPublishedToday(this.db, tenantId, this.clock.now()) : null,
    ]);
    return checkLimit(resource, today ?? usage[resource], info.limits[LIMIT_OF[resource]]);
  }

  /** the tenant's ceiling of a resource (0 = unlimited), without its usage */
  async limitOf(tenantId: string, resource: Resource): Promise<number> {
    return (await this.entry(tenantId)).info.limits[LIMIT_OF[resource]];
  }

  async usage(tenantId: string): Promise<Usage> {
    return (await this.entry(tenantId)).usage;
  }

  drop(tenantId: string): void {
    this.entries.delete(tenantId);
    this.loading.delete(tenantId);
  }

  dropAll(): void {
    this.entries.clear();
    this.loading.clear();
  }

  /**
   * After a change of the tenant's subscription or usage (null: of a plan, every tenant): this
   * process's memory is dropped and the shared entries go stale for every process. A shared cache
   * that cannot be reached leaves its entries to their TTL.
   */
  async changed(tenantId: string | null): Promise<void> {
    if (tenantId === null) this.dropAll();
    else this.drop(tenantId);
    await this.shared?.epochs.bump([tenantId ?? EVERY_PLAN]).catch(() => undefined);
  }

  private async load(tenantId: string): Promise<{ info: PlanInfo; usage: Usage }> {
    const shared = this.shared;
    if (!shared) return loadTenantLimits(this.db, this.people, tenantId, this.clock.now());
    // the epochs before the read models: an entry stored under them predates no change made after; null: Redis unreachable, not shared now
    const [tag, raw] = await Promise.all([
      shared.epochs.current([tenantId, EVERY_PLAN]).catch(() => null),
      shared.cache.get(sharedKey(tenantId)).catch(() => null),
    ]);
    if (tag !== null && raw !== null) {
      const stored = JSON.parse(raw) as Stored;
      if (stored.tag === tag && stored.day === utcDay(this.clock.now())) return stored;
    }
    const now = this.clock.now();
    const fresh = await loadTenantLimits(this.db, this.people, tenantId, now);
    if (tag !== null)
      await shared.cache
        .set(sharedKey(tenantId), JSON.stringify({ tag, day: utcDay(now), ...fresh } satisfies Stored), shared.ttlMs)
        .catch(() => undefined);
    return fresh;
  }

  private entry(tenantId: string): Promise<Entry> | Entry {
    const now = this.clock.now().getTime();
    const known = this.entries.get(tenantId);
    if (known && now >= known.loadedAt) {
      const age = now - known.loadedAt;
      if (age < this.maxAgeMs) {
        // past its refresh age the entry is still served while a reload replaces it behind the
        // answer: a busy tenant's calls never wait for the read models, and an entry is still
        // never served past maxAgeMs (a quiet tenant's next call waits for the reload as before)
        if (age >= known.refreshAfter && !this.loading.has(tenantId))
          this.startLoad(tenantId, now).catch(() => undefined);
        return known;
      }
    }
    return this.loading.get(tenantId) ?? this.startLoad(tenantId, now);
  }

  private startLoad(tenantId: string, now: number): Promise<Entry> {
    let pending = this.loading.get(tenantId);
    if (!pending) {
      pending = this.load(tenantId)
        .then(({ info, usage }) => {
          // a refresh age spread over the middle half of maxAgeMs: entries loaded together (a
          // cold start, a plan change) are not reloaded together, each reload a burst of queries
          const refreshAfter = this.maxAgeMs * (0.25 + Math.random() / 2);
          const entry = { info, usage: usage ?? emptyUsage(), loadedAt: now, refreshAfter };
          // only one tenant's drop discards its load (a global count let every publish of one tenant discard every other's)
          if (this.loading.get(tenantId) === pending) this.entries.set(tenantId, entry);
          return entry;
        })
        .finally(() => {
          if (this.loading.get(tenantId) === pending) this.loading.delete(tenantId);
        });
      this.loading.set(tenantId, pending);
    }
    return pending;
  }
}

/**
 * The authoritative check of a creation (infra/usage-limits.ts assertRoom): under the tenant's
 * transaction lock of the resource, the usage as committed (the usage read model is inline, so the
 * creations before this one are counted by the time their locks are released) plus `adding` must
 * stay within the limit — the same limit and count CheckLimit and GET usage answer with.
 */
export const assertRoom = async (
  book: LimitBook,
  clock: Clock,
  tx: Queryable,
  tenantId: string,
  resource: string,
  adding: number,
): Promise<void> => {
  if (tenantId === PLATFORM_TENANT_ID || !isResource(resource)) return;
  const { limit } = await book.checkLimit(tenantId, resource);
  if (limit === 0) return;
  await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`billing.usage:${tenantId}:${resource}`]);
  // the read model's counter alone unless the resource counts more (pending invitations, the day's bus events)
  const used =
    resource === 'users' || resource === 'events_per_day'
      ? (await usageOf(tx, book.people, tenantId, clock.now()))[resource]
      : Number(
          (
            await tx.query<{ used: string }>(
              'SELECT used::text FROM rm.billing_usage WHERE tenant_id = $1 AND resource = $2',
              [tenantId, resource],
            )
          ).rows[0]?.used ?? 0,
        );
  if (used + adding > limit) throw billingErrors.planLimitExceeded(resource, used, limit);
};
