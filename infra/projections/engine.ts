import type { StoredEvent } from '../../domain/shared/event';
import type { Db, Queryable, Tx } from '../postgres/db';
import { inTransaction } from '../postgres/db';
import type { EventStore, LogCheckpoint } from '../eventstore/event-store';
import { checkpointOf, LOG_START } from '../eventstore/event-store';
import { continueTraces } from '../observability/tracing';
import { executeBatch } from './batch';
import type { AnalyticsStore } from '../clickhouse/port';
import { AnalyticsProjector } from './analytics';
import type { AnyProjection, RegisteredProjection, Statement } from './projection';
import {
  generationTable,
  handlesType,
  isAnalytics,
  isTypePattern,
  relationsFor,
  statementsFor,
  typeMatches,
  viewName,
} from './projection';

export interface ProjectionStatus {
  name: string;
  mode: 'inline' | 'async';
  version: number;
  activeGeneration: number;
  building: number | null;
  checkpoint: LogCheckpoint;
  lag: number;
}

export type RebuildProgress = (p: { name: string; applied: number; total: number }) => void;

const checkpointName = (name: string, generation: number): string => `projection:${name}:g${generation}`;
const BATCH = 1000;

/**
 * Runs projections: inline ones inside the append transaction, async ones in batches from the
 * global log, each batch and its checkpoint in one transaction. Rebuilds fill a new generation
 * while readers keep reading the old one, then repoint the views atomically.
 */
export class ProjectionEngine {
  private readonly byName = new Map<string, RegisteredProjection>();
  private readonly inlineByType = new Map<string, AnyProjection[]>();
  /** inline projections that handle a pattern of types (data.*.*.created) */
  private readonly inlinePatterns: { pattern: string; projection: AnyProjection }[] = [];
  private readonly analytics: AnalyticsProjector;

  /** analytics: the ClickHouse store, for projections that target it (opened on first use) */
  constructor(
    private readonly db: Db,
    private readonly store: EventStore,
    projections: RegisteredProjection[],
    analytics?: () => Promise<AnalyticsStore>,
  ) {
    this.analytics = new AnalyticsProjector(
      db,
      store,
      analytics ?? (() => Promise.reject(new Error('no ClickHouse store was given to the projection engine'))),
    );
    for (const p of projections) {
      if (this.byName.has(p.name)) throw new Error(`projection ${p.name} is registered twice`);
      this.byName.set(p.name, p);
      if (isAnalytics(p) && (p.mode as string) !== 'async')
        throw new Error(`projection ${p.name} targets ClickHouse and must be async`);
      if (isAnalytics(p) || p.mode !== 'inline') continue;
      for (const type of p.handles)
        if (isTypePattern(type)) this.inlinePatterns.push({ pattern: type, projection: p });
        else this.inlineByType.set(type, [...(this.inlineByType.get(type) ?? []), p]);
    }
  }

  get projections(): RegisteredProjection[] {
    return [...this.byName.values()];
  }

  get(name: string): RegisteredProjection {
    const p = this.byName.get(name);
    if (!p) throw new Error(`unknown projection ${name}; known: ${[...this.byName.keys()].join(', ') || 'none'}`);
    return p;
  }

  /** applies inline projections to freshly appended events, in the append's transaction */
  async applyInline(tx: Tx, events: StoredEvent<Record<string, unknown>>[]): Promise<void> {
    await executeBatch(tx, this.inlineStatements(events));
  }

  /** the inline projections' statements for these events, for callers that send them with other statements */
  inlineStatements(events: StoredEvent<Record<string, unknown>>[]): Statement[] {
    const byProjection = new Map<AnyProjection, StoredEvent<Record<string, unknown>>[]>();
    for (const event of events) {
      const patterned = this.inlinePatterns.filter((i) => typeMatches(i.pattern, event.type)).map((i) => i.projection);
      for (const p of new Set([...(this.inlineByType.get(event.type) ?? []), ...patterned])) {
        const handled = byProjection.get(p);
        if (handled) handled.push(event);
        else byProjection.set(p, [event]);
      }
    }
    return [...byProjection].flatMap(([p, handled]) => statementsFor(p, handled, relationsFor(p, 'live')));
  }

  /**
   * Makes every projection servable: creates the first generation of new projections and rebuilds
   * the ones whose version changed. Called at start, before the process reports ready.
   */
  async prepare(onProgress?: RebuildProgress): Promise<void> {
    for (const p of this.byName.values()) {
      const { rows } = await this.db.query<{ version: number }>('SELECT version FROM es.projections WHERE name = $1', [
        p.name,
      ]);
      const stored = rows[0];
      if (!stored) await (isAnalytics(p) ? this.analytics.create(p) : this.create(p));
      if (!stored || stored.version !== p.version) await this.rebuild(p.name, onProgress);
    }
  }

  /** one batch of an async projection; returns how many events it applied */
  async runBatch(name: string, limit = BATCH): Promise<number> {
    const p = this.get(name);
    if (isAnalytics(p)) return this.analytics.runBatch(p, limit);
    return inTransaction(this.db, async (tx) => {
      const generation = await this.lockActive(tx, name);
      return this.applyBatch(tx, p, generation, limit);
    });
  }

  async status(): Promise<ProjectionStatus[]> {
    const { rows } = await this.db.query<{
      name: string;
      mode: 'inline' | 'async';
      version: number;
      active_generation: number;
      building: number | null;
    }>('SELECT name, mode, version, active_generation, building FROM es.projections ORDER BY name');
    const head = await this.store.headCheckpoint(this.db);
    return Promise.all(
      rows.map(async (r) => {
        const checkpoint =
          r.mode === 'inline' ? head : await this.checkpoint(this.db, checkpointName(r.name, r.active_generation));
        return {
          name: r.name,
          mode: r.mode,
          version: r.version,
          activeGeneration: r.active_generation,
          building: r.building,
          checkpoint,
          lag: r.mode === 'inline' ? 0 : await this.store.countAfter(this.db, checkpoint),
        };
      }),
    );
  }

  /**
   * Replays the whole log into a new generation while the active one keeps serving, then switches.
   * The switch holds a SHARE lock on es.events (appends wait a moment) so that the last events are
   * applied and the views repointed with nothing committed in between: there is no window in which
   * a reader sees a partial or stale read model.
   */
  async rebuild(name: string, onProgress?: RebuildProgress): Promise<void> {
    const p = this.get(name);
    if (isAnalytics(p))
      return this.analytics.rebuild(p, BATCH, (applied, total) => onProgress?.({ name, applied, total }));
    const next = await inTransaction(this.db, async (tx) => {
      const { rows } = await tx.query<{ active_generation: number; building: number | null }>(
        'SELECT active_generation, building FROM es.projections WHERE name = $1 FOR UPDATE',
        [name],
      );
      const row = rows[0]!;
      const generation = Math.max(row.active_generation, row.building ?? 0) + 1;
      await this.createTables(tx, p, generation);
      await tx.query('UPDATE es.projections SET building = $2, updated_at = now() WHERE name = $1', [name, generation]);
      await tx.query(
        "INSERT INTO es.checkpoints (name) VALUES ($1) ON CONFLICT (name) DO UPDATE SET transaction_id = '0', position = 0",
        [checkpointName(name, generation)],
      );
      return generation;
    });
    const total = await this.store.countAfter(this.db, LOG_START);
    let applied = 0;
    for (;;) {
      const n = await inTransaction(this.db, (tx) => this.applyBatch(tx, p, next, BATCH));
      applied += n;
      onProgress?.({ name, applied, total: Math.max(total, applied) });
      if (n < BATCH) break;
    }
    const old = await inTransaction(this.db, async (tx) => {
      const previous = await this.lockActive(tx, name);
      await tx.query('LOCK TABLE es.events IN SHARE MODE');
      for (;;) if ((await this.applyBatch(tx, p, next, BATCH, true)) < BATCH) break;
      await this.pointViews(tx, p, next);
      await tx.query(
        'UPDATE es.projections SET active_generation = $2, building = NULL, version = $3, updated_at = now() WHERE name = $1',
        [name, next, p.version],
      );
      return previous;
    });
    onProgress?.({ name, applied: Math.max(total, applied), total: Math.max(total, applied) });
    if (old !== next) await this.dropGeneration(p, old);
  }

  /**
   * Rebuilds the rows of one tenant in place, in one transaction: readers keep seeing the old rows
   * until the new ones commit. Async projections replay up to their checkpoint; the runner applies
   * the rest as usual.
   */
  async rebuildTenant(name: string, tenantId: string, onProgress?: RebuildProgress): Promise<number> {
    const p = this.get(name);
    // ClickHouse rows are append-only and the rows of a tenant may depend on carried state: a whole rebuild is the way
    if (isAnalytics(p))
      throw new Error(
        `${name} is a ClickHouse projection: rebuild it whole (platform projections rebuild ${name}); --tenant rebuilds PostgreSQL read models`,
      );
    return inTransaction(this.db, async (tx) => {
      const generation = await this.lockActive(tx, name);
      await tx.query('LOCK TABLE es.events IN SHARE MODE');
      const until = p.mode === 'inline' ? null : await this.checkpoint(tx, checkpointName(name, generation));
      const relations = relationsFor(p, generation);
      for (const table of Object.values<string>(relations))
        await tx.query(`DELETE FROM ${table} WHERE tenant_id = $1`, [tenantId]);
      let after = LOG_START;
      let applied = 0;
      for (;;) {
        const events = await this.store.readAll(tx, after, BATCH, { tenantId, types: p.handles, allCommitted: true });
        const due = (until ? events.filter((e) => compare(checkpointOf(e), until) <= 0) : events).filter((e) =>
          handlesType(p, e.type),
        );
        await executeBatch(tx, statementsFor(p, due, relations));
        applied += due.length;
        onProgress?.({ name, applied, total: applied });
        if (events.length < BATCH || due.length < events.length) break;
        after = checkpointOf(events[events.length - 1]!);
      }
      return applied;
    });
  }

  private async create(p: AnyProjection): Promise<void> {
    await inTransaction(this.db, async (tx) => {
      await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`projection:${p.name}`]);
      const exists = await tx.query('SELECT 1 FROM es.projections WHERE name = $1', [p.name]);
      if (exists.rowCount) return;
      await this.createTables(tx, p, 1);
      await this.pointViews(tx, p, 1);
      // version 0 marks "never built", so prepare() replays the history that exists
      await tx.query('INSERT INTO es.projections (name, version, mode, active_generation) VALUES ($1, 0, $2, 1)', [
        p.name,
        p.mode,
      ]);
      await tx.query('INSERT INTO es.checkpoints (name) VALUES ($1) ON CONFLICT DO NOTHING', [
        checkpointName(p.name, 1),
      ]);
    });
  }

  private async createTables(tx: Tx, p: AnyProjection, generation: number): Promise<void> {
    for (const [table, ddl] of Object.entries(p.tables)) {
      await tx.query(`DROP TABLE IF EXISTS ${generationTable(table, generation)} CASCADE`);
      for (const statement of ddl(generationTable(table, generation))) await tx.query(statement);
    }
  }

  private async pointViews(tx: Tx, p: AnyProjection, generation: number): Promise<void> {
    for (const table of Object.keys(p.tables)) {
      await tx.query(`DROP VIEW IF EXISTS ${viewName(table)}`);
      await tx.query(`CREATE VIEW ${viewName(table)} AS SELECT * FROM ${generationTable(table, generation)}`);
    }
  }

  private async dropGeneration(p: AnyProjection, generation: number): Promise<void> {
    for (const table of Object.keys(p.tables))
      await this.db.query(`DROP TABLE IF EXISTS ${generationTable(table, generation)} CASCADE`);
    await this.db.query('DELETE FROM es.checkpoints WHERE name = $1', [checkpointName(p.name, generation)]);
  }

  /** locks the projection's registry row (serializing batches, switches and tenant rebuilds) and returns its active generation */
  private async lockActive(tx: Tx, name: string): Promise<number> {
    const { rows } = await tx.query<{ active_generation: number }>(
      'SELECT active_generation FROM es.projections WHERE name = $1 FOR UPDATE',
      [name],
    );
    if (!rows[0]) throw new Error(`projection ${name} is not prepared`);
    return rows[0].active_generation;
  }

  private async applyBatch(
    tx: Tx,
    p: AnyProjection,
    generation: number,
    limit: number,
    allCommitted = false,
  ): Promise<number> {
    const name = checkpointName(p.name, generation);
    const from = await this.checkpoint(tx, name, true);
    const events = await this.store.readAll(tx, from, limit, { allCommitted });
    if (events.length === 0) return 0;
    const relations = relationsFor(p, generation);
    const handled = events.filter((e) => handlesType(p, e.type));
    const attributes = { projection: p.name, generation, events: events.length };
    await continueTraces(
      { batch: 'projection.batch', each: 'projection.apply' },
      handled,
      (e) => e,
      attributes,
      () => executeBatch(tx, statementsFor(p, handled, relations)),
    );
    const last = checkpointOf(events[events.length - 1]!);
    await tx.query(
      'UPDATE es.checkpoints SET transaction_id = $2::xid8, position = $3, updated_at = now() WHERE name = $1',
      [name, last.transactionId.toString(), last.position.toString()],
    );
    return events.length;
  }

  private async checkpoint(q: Queryable, name: string, lock = false): Promise<LogCheckpoint> {
    const { rows } = await q.query<{ transaction_id: string; position: string }>(
      `SELECT transaction_id::text AS transaction_id, position FROM es.checkpoints WHERE name = $1${lock ? ' FOR UPDATE' : ''}`,
      [name],
    );
    const row = rows[0];
    return row ? { transactionId: BigInt(row.transaction_id), position: BigInt(row.position) } : LOG_START;
  }
}

export const compare = (a: LogCheckpoint, b: LogCheckpoint): number =>
  a.transactionId !== b.transactionId
    ? a.transactionId < b.transactionId
      ? -1
      : 1
    : a.position === b.position
      ? 0
      : a.position < b.position
        ? -1
        : 1;
