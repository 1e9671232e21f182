import { billingErrors } from '../../domain/billing/errors';
import type { Kernel } from '../../infra/kernel';
import type { Tx } from '../../infra/postgres/db';
import { pgErrorCode } from '../../infra/postgres/db';
import type { Waiting } from '../../infra/postgres/group-commit';
import { answer, batcherPerKernel, CommitUnknown, GroupCommit, refuse } from '../../infra/postgres/group-commit';
import { pipelined, statement } from '../../infra/postgres/pipeline';

/** one publish's events, checked and enveloped, for the bus relay (events.outbox) */
export interface Staging {
  tenantId: string;
  /** the UTC day its events count in (YYYY-MM-DD) */
  day: string;
  /** the tenant's events_per_day (0: no limit) */
  limit: number;
  topic: string;
  events: { key: string; value: string; headers: string }[];
  at: Date;
}

/** the tenant's count for the day once this publish's events are counted */
export interface Staged {
  published: number;
}

type WaitingStaging = Waiting<Staging, Staged>;

/**
 * The plan's events_per_day and the staging, in one statement: the tenant's counter row for the day
 * moves only when the publish fits (concurrent publishes never overshoot; $4 ≤ 0: no limit) and the
 * events ($6..$8, in their order) are staged only when it moved. A publish runs it alone when its
 * batch failed.
 */
const STAGE_WITHIN_DAILY_LIMIT = `WITH counted AS (
    INSERT INTO events.daily_usage AS u (tenant_id, day, published) VALUES ($1, $2, $3)
    ON CONFLICT (tenant_id, day) DO UPDATE SET published = u.published + EXCLUDED.published
      WHERE $4::bigint <= 0 OR u.published + EXCLUDED.published <= $4::bigint
    RETURNING u.published
  ), staged AS (
    INSERT INTO events.outbox (topic, key, value, headers, ts)
    SELECT $5, k, v, h::jsonb, $9 FROM unnest($6::text[], $7::text[], $8::text[]) WITH ORDINALITY AS t(k, v, h, n)
    WHERE EXISTS (SELECT FROM counted) ORDER BY n
    RETURNING 1
  )
  SELECT count(*)::int AS staged, (SELECT published::text FROM counted) AS published FROM staged`;

const counterOf = (s: Staging): string => `${s.tenantId}\u0000${s.day}`;

const refusal = (s: Staging, published: number) =>
  billingErrors.planLimitExceeded('events_per_day', published, s.limit);

/**
 * Group commit of the bus's publishes (issue 25): a tenant's publishes all count on one row of
 * events.daily_usage, so staged one by one each waited for the commit of the one before (its
 * WAL flush) — at 1,000 publishes a second of one tenant the queue never emptied. The publishes
 * arriving while a batch is in flight share the next one, two round trips whatever their number:
 *
 *   1. BEGIN, the day's counter rows of the batch's tenants created if missing and locked (in
 *      ascending order, as every batch takes them);
 *   2. the counters moved, the events staged in arrival order, COMMIT.
 *
 * Each publish is decided in arrival order on the counts the ones before it left: it fits whole or
 * is refused whole (402 with the count it saw), exactly as alone. A batch that fails before its
 * COMMIT rolls back and its publishes run alone; one whose COMMIT's fate is unknown fails them.
 */
export class StagingBatcher {
  private readonly group: GroupCommit<Staging, Staged>;

  constructor(kernel: Kernel, options: { maxSize: number; concurrency: number }) {
    this.group = new GroupCommit(
      kernel.db,
      {
        span: 'events.publish.batch',
        ...options,
        // two batches in flight never wait on each other's counter rows in PostgreSQL
        locksOf: (s) => [counterOf(s)],
        onFailure: (error, publishes) =>
          kernel.logger.warn({ err: error, publishes }, 'a batch of publishes failed; they run alone'),
      },
      (client, batch) => this.run(client, batch),
      (s) => stageAlone(kernel, s),
    );
  }

  submit(staging: Staging): Promise<Staged> {
    return this.group.submit(staging);
  }

  private async run(client: Tx, batch: WaitingStaging[]): Promise<WaitingStaging[]> {
    const counters = [...new Set(batch.map((w) => counterOf(w.item)))].sort();
    const [tenants, days] = [0, 1].map((i) => counters.map((c) => c.split('\u0000')[i]!));
    const [, , locked] = await pipelined(client, [
      statement('BEGIN'),
      {
        name: 'bus_stage_counters',
        text: `INSERT INTO events.daily_usage (tenant_id, day, published)
          SELECT t, d::date, 0 FROM unnest($1::text[], $2::text[]) AS c(t, d) ORDER BY t, d
          ON CONFLICT (tenant_id, day) DO NOTHING`,
        values: [tenants, days],
      },
      {
        name: 'bus_stage_lock',
        text: `SELECT tenant_id, to_char(day, 'YYYY-MM-DD') AS day, published::text FROM events.daily_usage
          WHERE (tenant_id, day) IN (SELECT t, d::date FROM unnest($1::text[], $2::text[]) AS c(t, d))
          ORDER BY tenant_id, day FOR UPDATE`,
        values: [tenants, days],
      },
    ]);
    // the day as the batch keys it, whatever the server's DateStyle (day::text follows it)
    const counts = new Map<string, number>(
      locked!.rows.map((r: { tenant_id: string; day: string; published: string }) => [
        `${r.tenant_id}\u0000${r.day}`,
        Number(r.published),
      ]),
    );
    const staged: { w: WaitingStaging; published: number }[] = [];
    const refused: { w: WaitingStaging; published: number }[] = [];
    for (const w of batch) {
      const counter = counterOf(w.item);
      const published = counts.get(counter);
      if (published === undefined) throw new Error(`no counter row for ${counter}`);
      const after = published + w.item.events.length;
      if (w.item.limit <= 0 || after <= w.item.limit) {
        counts.set(counter, after);
        staged.push({ w, published: after });
      } else refused.push({ w, published });
    }
    if (staged.length === 0) await client.query('ROLLBACK');
    else {
      const moved = counters.filter((c) => staged.some(({ w }) => counterOf(w.item) === c));
      const rows = staged.flatMap(({ w }) => w.item.events.map((e) => ({ s: w.item, e })));
      try {
        await pipelined(client, [
          {
            name: 'bus_stage_count',
            text: `UPDATE events.daily_usage u SET published = c.published
              FROM unnest($1::text[], $2::date[], $3::bigint[]) AS c(t, d, published)
              WHERE u.tenant_id = c.t AND u.day = c.d`,
            values: [
              moved.map((c) => c.split('\u0000')[0]),
              moved.map((c) => c.split('\u0000')[1]),
              moved.map((c) => String(counts.get(c))),
            ],
          },
          {
            name: 'bus_stage_events',
            text: `INSERT INTO events.outbox (topic, key, value, headers, ts)
              SELECT topic, k, v, h::jsonb, ts
              FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::timestamptz[]) WITH ORDINALITY AS r(topic, k, v, h, ts, n)
              ORDER BY n`,
            values: [
              rows.map((r) => r.s.topic),
              rows.map((r) => r.e.key),
              rows.map((r) => r.e.value),
              rows.map((r) => r.e.headers),
              rows.map((r) => r.s.at.toISOString()),
            ],
          },
          statement('COMMIT'),
        ]);
      } catch (error) {
        // a statement PostgreSQL refused aborted the transaction: its COMMIT rolled back; anything else may have committed
        if (pgErrorCode(error) === undefined) throw new CommitUnknown(error);
        throw error;
      }
    }
    for (const { w, published } of staged) answer(w, { published });
    for (const { w, published } of refused) refuse(w, refusal(w.item, published));
    return [];
  }
}

/** a publish staged on its own (its batch failed) */
const stageAlone = async (kernel: Kernel, s: Staging): Promise<Staged> => {
  const { rows } = await kernel.db.query<{ staged: number; published: string | null }>({
    name: 'bus_stage_alone',
    text: STAGE_WITHIN_DAILY_LIMIT,
    values: [
      s.tenantId,
      s.day,
      s.events.length,
      s.limit,
      s.topic,
      s.events.map((e) => e.key),
      s.events.map((e) => e.value),
      s.events.map((e) => e.headers),
      s.at,
    ],
  });
  if (rows[0]?.staged === s.events.length) return { published: Number(rows[0].published) };
  const counted = await kernel.db.query<{ published: string }>(
    'SELECT published::text FROM events.daily_usage WHERE tenant_id = $1 AND day = $2',
    [s.tenantId, s.day],
  );
  throw refusal(s, Number(counted.rows[0]?.published ?? 0));
};

/** this process's batcher of publishes */
export const stagingBatcher = batcherPerKernel((kernel, options) => new StagingBatcher(kernel, options));
