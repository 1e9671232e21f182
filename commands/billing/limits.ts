import type { PlanInfo } from '../../domain/billing/plan-info';
import type { LimitAnswer, Resource } from '../../domain/billing/resources';
import { checkLimit, LIMIT_OF } from '../../domain/billing/resources';
import type { Usage } from '../../domain/billing/usage';
import { emptyUsage } from '../../domain/billing/usage';
import type { Queryable } from '../../infra/postgres/db';
import type { Clock } from '../../infra/runtime/clock';
import { loadTenantLimits } from './lookups';

/** the questions the gateway asks billing: in process, or over gRPC in split deployment */
export interface BillingAnswers {
  planInfo(tenantId: string): Promise<PlanInfo>;
  checkLimit(tenantId: string, resource: Resource): Promise<LimitAnswer>;
}

interface Entry { info: PlanInfo; usage: Usage; loadedAt: number }

/**
 * CheckLimit's memory (spec 001: answers in under a millisecond): each tenant's limits and usage,
 * loaded from the read models on first use and dropped whenever an event changes them — billing's
 * own events and the usage events of other services, delivered through the log to every process
 * (commands/billing/context.ts installs the handlers), and by billing's own commands in the process
 * that ran them, right after their commit. A short TTL (maxAgeMs) is the safety net for an
 * invalidation lost while the log was unreachable.
 */
export class LimitBook implements BillingAnswers {
  private readonly entries = new Map<string, Entry>();
  private readonly loading = new Map<string, Promise<Entry>>();
  /** bumped by every drop: a load that started before a drop is not kept */
  private generation = 0;

  constructor(private readonly db: Queryable, private readonly clock: Clock, private readonly maxAgeMs = 2_000) {}

  async planInfo(tenantId: string): Promise<PlanInfo> {
    return (await this.entry(tenantId)).info;
  }

  async checkLimit(tenantId: string, resource: Resource): Promise<LimitAnswer> {
    const { info, usage } = await this.entry(tenantId);
    return checkLimit(resource, usage[resource], info.limits[LIMIT_OF[resource]]);
  }

  async usage(tenantId: string): Promise<Usage> {
    return (await this.entry(tenantId)).usage;
  }

  drop(tenantId: string): void {
    this.generation += 1;
    this.entries.delete(tenantId);
    this.loading.delete(tenantId);
  }

  dropAll(): void {
    this.generation += 1;
    this.entries.clear();
    this.loading.clear();
  }

  private entry(tenantId: string): Promise<Entry> | Entry {
    const now = this.clock.now().getTime();
    const known = this.entries.get(tenantId);
    if (known && now - known.loadedAt < this.maxAgeMs && now >= known.loadedAt) return known;
    let pending = this.loading.get(tenantId);
    if (!pending) {
      const generation = this.generation;
      pending = loadTenantLimits(this.db, tenantId).then(({ info, usage }) => {
        const entry = { info, usage: usage ?? emptyUsage(), loadedAt: now };
        if (generation === this.generation) this.entries.set(tenantId, entry);
        return entry;
      }).finally(() => {
        if (this.loading.get(tenantId) === pending) this.loading.delete(tenantId);
      });
      this.loading.set(tenantId, pending);
    }
    return pending;
  }
}
