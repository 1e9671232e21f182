import { defineProjections } from '../../../infra/services';
import type { Projection } from '../../../infra/projections/projection';
import { sql } from '../../../infra/projections/projection';

/** inline: counters readable right after the write that changed them */
export const counters: Projection<'tally_counters'> = {
  name: 'tally.counters',
  version: 1,
  mode: 'inline',
  handles: ['tally.counter.created', 'tally.counter.incremented'],
  tables: {
    tally_counters: (t) => [
      `CREATE TABLE ${t} (tenant_id text NOT NULL, id text NOT NULL, name text NOT NULL, value bigint NOT NULL, version int NOT NULL, created_at timestamptz NOT NULL, PRIMARY KEY (tenant_id, id))`,
    ],
  },
  evolve: (e, t) => {
    const d = e.data as { counterId: string; name?: string; value?: number };
    switch (e.type) {
      case 'tally.counter.created':
        return [
          sql(
            `INSERT INTO ${t.tally_counters} (tenant_id, id, name, value, version, created_at) VALUES ($1, $2, $3, 0, $4, $5) ON CONFLICT (tenant_id, id) DO NOTHING`,
            e.tenantId,
            d.counterId,
            d.name,
            e.streamVersion,
            e.occurredAt,
          ),
        ];
      case 'tally.counter.incremented':
        // guarded by the stream version: applying an event twice changes nothing
        return [
          sql(
            `UPDATE ${t.tally_counters} SET value = $3, version = $4 WHERE tenant_id = $1 AND id = $2 AND version < $4`,
            e.tenantId,
            d.counterId,
            d.value,
            e.streamVersion,
          ),
        ];
      default:
        return [];
    }
  },
};

/** async: per-tenant totals, built by the projector from the global log */
export const totals: Projection<'tally_totals' | 'tally_applied'> = {
  name: 'tally.totals',
  version: 1,
  mode: 'async',
  handles: ['tally.counter.incremented'],
  tables: {
    tally_totals: (t) => [
      `CREATE TABLE ${t} (tenant_id text PRIMARY KEY, increments bigint NOT NULL, sum bigint NOT NULL)`,
    ],
    // remembers applied event ids so that a replay does not count twice
    tally_applied: (t) => [
      `CREATE TABLE ${t} (tenant_id text NOT NULL, event_id uuid NOT NULL, PRIMARY KEY (tenant_id, event_id))`,
    ],
  },
  evolve: (e, t) => [
    sql(
      `WITH fresh AS (INSERT INTO ${t.tally_applied} (tenant_id, event_id) VALUES ($1, $2) ON CONFLICT DO NOTHING RETURNING 1)
         INSERT INTO ${t.tally_totals} (tenant_id, increments, sum) SELECT $1, 1, $3 FROM fresh
         ON CONFLICT (tenant_id) DO UPDATE SET increments = ${t.tally_totals}.increments + 1, sum = ${t.tally_totals}.sum + EXCLUDED.sum`,
      e.tenantId,
      e.eventId,
      (e.data as { by: number }).by,
    ),
  ],
};

export default defineProjections({ projections: [counters, totals] });
