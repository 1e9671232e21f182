import type { StoredEvent } from '../../domain/shared/event';
import type { AnalyticsStore } from '../clickhouse/port';
import { tableOf } from '../clickhouse/port';
import type { EventStore, LogCheckpoint } from '../eventstore/event-store';
import { checkpointOf, LOG_START } from '../eventstore/event-store';
import { continueTraces } from '../observability/tracing';
import type { Db, Queryable, Tx } from '../postgres/db';
import { inTransaction } from '../postgres/db';
import type { AnyAnalyticsProjection } from './projection';
import { handlesType } from './projection';

type Events = StoredEvent<Record<string, unknown>>[];

export const analyticsCheckpointName = (name: string, generation: number): string =>
  `projection:${name}:g${generation}`;
const lockKey = (name: string) => `projection:${name}`;

/**
 * Runs the ClickHouse projections (AnalyticsProjection): the same registry rows, checkpoints and
 * generations as PostgreSQL read models (es.projections, es.checkpoints), with the differences
 * ClickHouse imposes:
 *
 * - No transaction spans both stores, and none may stay open across a call to ClickHouse (it would
 *   hold back pg_snapshot_xmin for every log reader). A batch inserts its rows first, then commits
 *   its checkpoint and carried state in one short PostgreSQL transaction; a crash in between
 *   inserts the same rows again, which the tables collapse (the projection's contract).
 * - One process at a time runs a projection: a session advisory lock (no transaction id), tried per
 *   batch, so standby projectors wait rather than write twice.
 * - The generation's physical tables are `<db>.<table>_g<N>` behind a view `<db>.<table>`; a
 *   rebuild fills the next generation beside the active one (its own checkpoint and state), takes
 *   the projection's lock for the last catch-up, repoints the views and switches the registry row.
 *   Readers see the old generation until the view points at a complete new one.
 */
export class AnalyticsProjector {
  constructor(
    private readonly db: Db,
    private readonly store: EventStore,
    private readonly analytics: () => Promise<AnalyticsStore>,
  ) {}

  /** the first generation: tables, views and registry row at version 0 ("never built") */
  async create(p: AnyAnalyticsProjection): Promise<void> {
    const ch = await this.analytics();
    // processes starting together take turns; the later ones find the registry row and leave the tables alone
    await this.withLock(
      p.name,
      'wait',
      async () => {
        if ((await this.db.query('SELECT 1 FROM es.projections WHERE name = $1', [p.name])).rowCount) return;
        await this.createTables(ch, p, 1);
        await this.pointViews(ch, p, 1);
        await inTransaction(this.db, async (tx) => {
          await tx.query(
            'INSERT INTO es.projections (name, version, mode, active_generation) VALUES ($1, 0, $2, 1) ON CONFLICT (name) DO NOTHING',
            [p.name, p.mode],
          );
          await tx.query('INSERT INTO es.checkpoints (name) VALUES ($1) ON CONFLICT DO NOTHING', [
            analyticsCheckpointName(p.name, 1),
          ]);
        });
      },
      undefined,
    );
  }

  /** one batch into the active generation, unless another process runs this projection now; returns how many events it read */
  async runBatch(p: AnyAnalyticsProjection, limit: number): Promise<number> {
    return this.withLock(
      p.name,
      'try',
      async () => {
        const { rows } = await this.db.query<{ active_generation: number }>(
          'SELECT active_generation FROM es.projections WHERE name = $1',
          [p.name],
        );
        if (!rows[0]) throw new Error(`projection ${p.name} is not prepared`);
        return this.applyBatch(p, rows[0].active_generation, limit);
      },
      0,
    );
  }

  /** replays the whole log into a new generation while the active one serves, then switches */
  async rebuild(
    p: AnyAnalyticsProjection,
    batch: number,
    onProgress?: (applied: number, total: number) => void,
  ): Promise<void> {
    const ch = await this.analytics();
    const next = await inTransaction(this.db, async (tx) => {
      const { rows } = await tx.query<{ active_generation: number; building: number | null }>(
        'SELECT active_generation, building FROM es.projections WHERE name = $1 FOR UPDATE',
        [p.name],
      );
      const row = rows[0]!;
      const generation = Math.max(row.active_generation, row.building ?? 0) + 1;
      await tx.query('UPDATE es.projections SET building = $2, updated_at = now() WHERE name = $1', [
        p.name,
        generation,
      ]);
      await tx.query(
        `INSERT INTO es.checkpoints (name) VALUES ($1) ON CONFLICT (name) DO UPDATE SET transaction_id = '0', position = 0`,
        [analyticsCheckpointName(p.name, generation)],
      );
      await tx.query('DELETE FROM es.projection_state WHERE projection = $1 AND generation = $2', [p.name, generation]);
      return generation;
    });
    await this.createTables(ch, p, next);
    const total = await this.store.countAfter(this.db, LOG_START);
    let applied = 0;
    for (;;) {
      const n = await this.applyBatch(p, next, batch);
      applied += n;
      onProgress?.(applied, Math.max(total, applied));
      if (n < batch) break;
    }
    const old = await this.withLock(
      p.name,
      'wait',
      async () => {
        for (;;) {
          const n = await this.applyBatch(p, next, batch);
          applied += n;
          if (n < batch) break;
        }
        await this.pointViews(ch, p, next);
        return inTransaction(this.db, async (tx) => {
          const { rows } = await tx.query<{ active_generation: number }>(
            'SELECT active_generation FROM es.projections WHERE name = $1 FOR UPDATE',
            [p.name],
          );
          await tx.query(
            'UPDATE es.projections SET active_generation = $2, building = NULL, version = $3, updated_at = now() WHERE name = $1',
            [p.name, next, p.version],
          );
          return rows[0]!.active_generation;
        });
      },
      0,
    );
    onProgress?.(applied, Math.max(total, applied));
    if (old !== next) await this.dropGeneration(ch, p, old);
  }

  private async applyBatch(p: AnyAnalyticsProjection, generation: number, limit: number): Promise<number> {
    const name = analyticsCheckpointName(p.name, generation);
    const from = await this.checkpoint(this.db, name);
    const events = await this.store.readAll(this.db, from, limit);
    if (events.length === 0) return 0;
    const handled = events.filter((e) => handlesType(p, e.type));
    const before = await this.loadState(p, generation, handled);
    const { rows, state } = p.rows(handled, before);
    const ch = await this.analytics();
    const attributes = { projection: p.name, generation, events: events.length };
    await continueTraces(
      { batch: 'projection.batch', each: 'projection.apply' },
      handled,
      (e) => e,
      attributes,
      async () => {
        for (const [table, list] of Object.entries(rows) as [string, object[]][])
          await ch.insert(generationTable(ch, table, generation), list);
      },
    );
    const last = checkpointOf(events[events.length - 1]!);
    await inTransaction(this.db, async (tx) => {
      await tx.query(
        'UPDATE es.checkpoints SET transaction_id = $2::xid8, position = $3, updated_at = now() WHERE name = $1',
        [name, last.transactionId.toString(), last.position.toString()],
      );
      await this.saveState(tx, p, generation, state);
    });
    return events.length;
  }

  private async loadState(
    p: AnyAnalyticsProjection,
    generation: number,
    events: Events,
  ): Promise<Map<string, unknown>> {
    const keys = p.stateKey
      ? [...new Set(events.map((e) => p.stateKey!(e)).filter((k): k is string => k !== null))]
      : [];
    if (keys.length === 0) return new Map();
    const { rows } = await this.db.query<{ key: string; value: unknown }>(
      'SELECT key, value FROM es.projection_state WHERE projection = $1 AND generation = $2 AND key = ANY($3::text[])',
      [p.name, generation, keys],
    );
    return new Map(rows.map((r) => [r.key, r.value]));
  }

  private async saveState(
    tx: Tx,
    p: AnyAnalyticsProjection,
    generation: number,
    state: ReadonlyMap<string, unknown>,
  ): Promise<void> {
    if (state.size === 0) return;
    await tx.query(
      `INSERT INTO es.projection_state (projection, generation, key, value)
       SELECT $1, $2, k, v FROM unnest($3::text[], $4::jsonb[]) AS x(k, v)
       ON CONFLICT (projection, generation, key) DO UPDATE SET value = EXCLUDED.value`,
      [p.name, generation, [...state.keys()], [...state.values()].map((v) => JSON.stringify(v))],
    );
  }

  private async createTables(ch: AnalyticsStore, p: AnyAnalyticsProjection, generation: number): Promise<void> {
    for (const [table, ddl] of Object.entries(p.tables)) {
      const physical = generationTable(ch, table, generation);
      await ch.command(`DROP TABLE IF EXISTS ${physical}`);
      for (const statement of ddl(physical)) await ch.command(statement);
    }
  }

  private async pointViews(ch: AnalyticsStore, p: AnyAnalyticsProjection, generation: number): Promise<void> {
    for (const table of Object.keys(p.tables)) {
      await ch.command(
        `CREATE OR REPLACE VIEW ${tableOf(ch, table)} AS SELECT * FROM ${generationTable(ch, table, generation)}`,
      );
    }
  }

  private async dropGeneration(ch: AnalyticsStore, p: AnyAnalyticsProjection, generation: number): Promise<void> {
    for (const table of Object.keys(p.tables))
      await ch.command(`DROP TABLE IF EXISTS ${generationTable(ch, table, generation)}`);
    await this.db.query('DELETE FROM es.checkpoints WHERE name = $1', [analyticsCheckpointName(p.name, generation)]);
    await this.db.query('DELETE FROM es.projection_state WHERE projection = $1 AND generation = $2', [
      p.name,
      generation,
    ]);
  }

  /** runs fn holding the projection's session advisory lock: 'try' answers `busy` when another process holds it */
  private async withLock<T>(name: string, mode: 'try' | 'wait', fn: () => Promise<T>, busy: T): Promise<T> {
    const client = await this.db.connect();
    try {
      if (mode === 'wait') {
        await client.query('SELECT pg_advisory_lock(hashtext($1))', [lockKey(name)]);
      } else {
        const { rows } = await client.query<{ ok: boolean }>('SELECT pg_try_advisory_lock(hashtext($1)) AS ok', [
          lockKey(name),
        ]);
        if (!rows[0]?.ok) return busy;
      }
      try {
        return await fn();
      } finally {
        await client.query('SELECT pg_advisory_unlock(hashtext($1))', [lockKey(name)]);
      }
    } finally {
      client.release();
    }
  }

  private async checkpoint(q: Queryable, name: string): Promise<LogCheckpoint> {
    const { rows } = await q.query<{ transaction_id: string; position: string }>(
      'SELECT transaction_id::text AS transaction_id, position FROM es.checkpoints WHERE name = $1',
      [name],
    );
    const row = rows[0];
    return row ? { transactionId: BigInt(row.transaction_id), position: BigInt(row.position) } : LOG_START;
  }
}

/** `<db>.<table>_g<N>`: a generation's physical table */
export const generationTable = (ch: Pick<AnalyticsStore, 'database'>, table: string, generation: number): string =>
  tableOf(ch, `${table}_g${generation}`);
