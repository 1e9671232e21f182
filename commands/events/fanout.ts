import type { Db, Queryable } from '../../infra/postgres/db';
import type { LogRecord } from '../../infra/log/port';
import { eventOfRecord } from './records';
import { prepared } from '../../infra/postgres/pipeline';

export const RECORDS_CHANNEL = 'events_records';

/**
 * Copies a batch of one partition's log records into the tenants' sequences (events.records), in
 * one statement: each tenant's records get the next numbers of its head on that partition, the
 * partition's progress moves to the batch's last offset, and the delivery workers are woken. A batch
 * the log delivers again (a crash before its commit) is filtered by the progress: nothing twice.
 * One consumer-group member owns a partition at a time, so heads of a partition have one writer.
 */
export const copyRecords = async (db: Db, topic: string, records: LogRecord[]): Promise<number> => {
  if (records.length === 0) return 0;
  const partition = records[0]!.partition;
  const events = records.flatMap((r) => {
    const event = eventOfRecord(topic, r);
    return event ? [{ offset: r.offset, event, key: r.key, spanId: r.headers.spanId ?? null }] : [];
  });
  const last = records[records.length - 1]!.offset;
  const { rows } = await db.query<{ copied: string }>(
    COPY([
      topic,
      partition,
      events.map((e) => e.offset),
      events.map((e) => e.event.tenantId),
      events.map((e) => e.event.eventId),
      events.map((e) => e.event.type),
      events.map((e) => e.key),
      events.map((e) => e.event.timestamp),
      events.map((e) => JSON.stringify(e.event)),
      last,
      RECORDS_CHANNEL,
      events.map((e) => e.spanId),
    ]),
  );
  return Number(rows[0]?.copied ?? 0);
};

// $1 topic, $2 partition, $3-$9 per record: offset, tenant, event id, type, key, timestamp, value; $10 the batch's last offset, $11 channel;
// $12 per record: the span that appended its event (the record's spanId header), which its deliveries continue
const COPY = prepared(
  'bus_fanout_copy',
  `
  WITH input AS (
    SELECT * FROM unnest($3::bigint[], $4::text[], $5::uuid[], $6::text[], $7::text[], $8::timestamptz[], $9::text[], $12::text[])
      AS r(log_offset, tenant_id, event_id, type, key, ts, value, span_id)),
  fresh AS (
    SELECT * FROM input WHERE log_offset > coalesce((SELECT last_offset FROM events.fanout_progress WHERE topic = $1 AND partition = $2), -1)),
  counts AS (SELECT tenant_id, count(*) AS n FROM fresh GROUP BY tenant_id),
  heads AS (
    INSERT INTO events.tenant_heads AS h (topic, tenant_id, partition, next_seq) SELECT $1, tenant_id, $2, n FROM counts
    ON CONFLICT (topic, tenant_id, partition) DO UPDATE SET next_seq = h.next_seq + EXCLUDED.next_seq
    RETURNING h.tenant_id, h.next_seq),
  copied AS (
    INSERT INTO events.records (topic, tenant_id, partition, seq, log_offset, event_id, type, key, ts, value, span_id)
    SELECT $1, f.tenant_id, $2, h.next_seq - c.n + row_number() OVER (PARTITION BY f.tenant_id ORDER BY f.log_offset) - 1, f.log_offset, f.event_id, f.type, f.key, f.ts, f.value, f.span_id
      FROM fresh f JOIN counts c ON c.tenant_id = f.tenant_id JOIN heads h ON h.tenant_id = f.tenant_id
    RETURNING 1),
  progress AS (
    INSERT INTO events.fanout_progress (topic, partition, last_offset) VALUES ($1, $2, $10)
    ON CONFLICT (topic, partition) DO UPDATE SET last_offset = greatest(events.fanout_progress.last_offset, EXCLUDED.last_offset))
  SELECT (SELECT count(*) FROM copied) AS copied, pg_notify($11, $1)`,
);

/** the first time a topic is read: the time its copy starts (a minute before its first subscription) */
export const fanoutStart = async (q: Queryable, topic: string): Promise<Date | null> =>
  (await q.query<{ indexed_since: Date }>('SELECT indexed_since FROM events.fanout_topics WHERE topic = $1', [topic]))
    .rows[0]?.indexed_since ?? null;

/** the topics the fan-out reads: every topic it has started on, and those some subscription reads */
export const fanoutTopics = async (q: Queryable): Promise<{ topic: string; since: Date; started: boolean }[]> =>
  (
    await q.query<{ topic: string; since: Date; started: boolean }>(
      `SELECT topic, min(since) AS since, bool_or(started) AS started FROM (
       SELECT topic, indexed_since AS since, true AS started FROM events.fanout_topics
       UNION ALL
       SELECT topic, min(created_at) - interval '1 minute', false FROM rm.events_subscriptions WHERE status = 'active' GROUP BY topic) t
     GROUP BY topic ORDER BY topic`,
    )
  ).rows;
