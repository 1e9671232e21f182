import type { Notification, NotificationCommand } from '../../domain/notify/notification';
import type { NotificationEvent } from '../../domain/notify/events';
import { systemMeta } from '../../infra/kernel';
import type { Kernel } from '../../infra/kernel';
import type { Loaded } from '../../infra/eventstore/unit-of-work';
import { UnitOfWork } from '../../infra/eventstore/unit-of-work';
import { inline } from '../../infra/postgres/inline';
import type { Tx } from '../../infra/postgres/db';
import { NotificationAggregate, notificationStream } from './aggregates';

/** a notification stream's head as the queue queries join it (es.streams) */
export interface HeadColumns {
  id: string;
  tenant_id: string;
  version: number | null;
  state: unknown;
  state_schema: string | null;
}

/** the SQL that joins a queue row (alias d) to its notification's stream head (alias s) */
export const HEAD_JOIN = `JOIN es.streams s ON s.stream_id = 'notify.notification:' || d.tenant_id || ':' || d.id::text`;

/**
 * Decisions on many notifications of many tenants, written as one statement of appends plus the
 * inline projections' statements, for the workers' claim, outcome and reaping transactions (one
 * unit of work per tenant, so every event carries its own tenant; actor "system").
 */
export class NotificationBatch {
  private readonly units = new Map<string, UnitOfWork>();

  constructor(
    private readonly kernel: Kernel,
    private readonly tx: Tx,
  ) {}

  /** the aggregate as its head row holds it; an older state shape is folded from its events */
  async loaded(row: HeadColumns): Promise<Loaded<Notification>> {
    const streamId = notificationStream(row.tenant_id, row.id);
    if (row.version !== null && row.state_schema === NotificationAggregate.stateSchema && row.state !== null) {
      return { streamId, state: NotificationAggregate.decode!(row.state), version: row.version };
    }
    return this.unit(row.tenant_id).load(NotificationAggregate, streamId);
  }

  decide(tenantId: string, loaded: Loaded<Notification>, command: NotificationCommand): NotificationEvent[] {
    return this.unit(tenantId).decide(NotificationAggregate, loaded, command).events;
  }

  /**
   * the appends and projection rows as SQL text (values written in by the inliner), to send with
   * the queue's own statements in one simple-protocol round trip
   */
  statements(): string[] {
    const appends = [...this.units.values()].flatMap((u) =>
      u.takePending().map((request) => ({ request, meta: u.meta })),
    );
    if (appends.length === 0) return [];
    const { statements, events } = this.kernel.store.prepareAppends(appends, this.kernel.clock.now());
    return [...statements, ...this.kernel.projections.inlineStatements(events)].map(inline);
  }

  private unit(tenantId: string): UnitOfWork {
    let unit = this.units.get(tenantId);
    if (!unit) {
      unit = new UnitOfWork(this.tx, systemMeta(tenantId), this.kernel.store);
      this.units.set(tenantId, unit);
    }
    return unit;
  }
}
