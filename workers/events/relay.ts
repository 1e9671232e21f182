import type { Kernel } from '../../infra/kernel';
import { topicSpecOf } from '../../commands/events/subscriptions';
import { Relay } from '../relay';
import { prepared } from '../../infra/postgres/pipeline';

interface StagedRow {
  position: string;
  topic: string;
  key: string;
  value: string;
  headers: Record<string, string>;
  ts: Date;
}

const READ_STAGED = prepared(
  'bus_relay_read',
  `SELECT position, topic, key, value, headers, ts FROM events.outbox
  WHERE transaction_id < pg_snapshot_xmin(pg_current_snapshot()) ORDER BY transaction_id, position LIMIT $1`,
);
const DELETE_PUBLISHED = prepared('bus_relay_delete', 'DELETE FROM events.outbox WHERE position = ANY($1::bigint[])');

/**
 * The bus relay: publishes what POST /events/publish(/batch) staged in events.outbox (and the dead
 * letters of platform.<domain>.dlq) to the log, in transaction order, then deletes it (the relay
 * core: workers/relay.ts). Rows of transactions still running are invisible to it (read below
 * pg_snapshot_xmin), so none is ever skipped; a crash between publish and delete publishes them
 * again (receivers deduplicate by eventId).
 */
export const busRelay = (kernel: Kernel, options = { batchSize: 2000, idleMs: 20 }): Relay<StagedRow> =>
  new Relay(
    kernel.db,
    kernel.log,
    kernel.logger,
    {
      name: 'events-relay',
      read: async (limit) => (await kernel.db.query<StagedRow>(READ_STAGED([limit]))).rows,
      recordOf: (r) => ({
        topic: r.topic,
        record: { key: r.key, value: r.value, headers: r.headers, timestamp: r.ts.getTime() },
      }),
      topicSpec: (topic) => topicSpecOf(kernel, topic),
      traceOf: (r) => r.headers,
      async done(rows) {
        await kernel.db.query(DELETE_PUBLISHED([rows.map((r) => r.position)]));
      },
    },
    {
      ...options,
      maxBackoffMs: 2000,
      failure: { message: 'event bus relay cannot publish; retrying the same records', every: 50 },
    },
  );
