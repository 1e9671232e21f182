import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AUDIT_TOPIC, auditRecord, stageAudit } from '../../../infra/audit';
import { EventStore } from '../../../infra/eventstore/event-store';
import { PgLog } from '../../../infra/log/pg-log';
import { silentLogger } from '../../../infra/observability/logger';
import type { Db } from '../../../infra/postgres/db';
import { createPool, inTransaction } from '../../../infra/postgres/db';
import { systemClock, uuidV7Ids } from '../../../infra/runtime/clock';
import { auditRelay } from '../../../workers/audit-relay';
import { OutboxRelay } from '../../../workers/outbox-relay';
import type { RelayOptions } from '../../../workers/relay';
import { Relay } from '../../../workers/relay';
import type { TestDatabase } from '../../support/db';
import { createTestDatabase } from '../../support/db';
import { pollUntil } from '../../support/poll';

/**
 * The relay core (workers/relay.ts) with the smallest pool there is. A relay holds its leader lock
 * for its whole life; were that session one of the pool's connections, a pool of one would be
 * deadlocked (the lock held, every read of the outbox waiting for the pool) and any pool would
 * lose a connection per relay. The lock's session is the relay's own and holds no transaction.
 */
let t: TestDatabase;
let pool: Db;
let log: PgLog;
const store = new EventStore(systemClock, uuidV7Ids);
const logger = silentLogger();

beforeAll(async () => {
  t = await createTestDatabase('relay');
  pool = createPool(t.url, { max: 1, applicationName: 'relay-core-test' });
  log = new PgLog(pool, { logger });
  await log.ensureTopics([
    { name: AUDIT_TOPIC, partitions: 1, retentionMs: 3_600_000 },
    { name: 'platform.tally.events', partitions: 1, retentionMs: 3_600_000 },
  ]);
});
afterAll(async () => {
  await log?.close();
  await pool?.end();
  await t?.drop();
});

const onTopic = async (topic: string) =>
  (await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM log.records WHERE topic = $1', [topic])).rows[0]?.n;

describe('relays over a pool of one connection', () => {
  it('publish the audit outbox and the event store, their leader locks held outside the pool and outside any transaction', async () => {
    const tenantId = 'tenant-relay';
    await stageAudit(
      t.db,
      Array.from({ length: 3 }, (_, i) =>
        auditRecord(
          {
            action: 'shop.order.placed',
            entityType: 'order',
            entityId: `o-${i}`,
            tenantId,
            actorId: 'u-1',
            timestamp: new Date().toISOString(),
          },
          uuidV7Ids.next(),
        ),
      ),
    );
    await inTransaction(t.db, (tx) =>
      store.append(
        tx,
        [
          {
            streamId: 'tally.counter:tenant-relay:c1',
            expectedVersion: 0,
            events: [{ type: 'tally.counter.created', data: { counterId: 'c1', name: 'c' } }],
          },
        ],
        { tenantId, actorId: null, traceId: null, correlationId: null, causationId: null },
      ),
    );
    const audit = auditRelay(
      { db: pool, log, logger, ids: uuidV7Ids },
      { batchSize: 500, publishTimeoutMs: 5000, idleMs: 20, maxBackoffMs: 200 },
    ).start();
    const events = new OutboxRelay(pool, store, log, logger, { name: 'relay-core-test', idleMs: 20 });
    events.start();
    try {
      await pollUntil(
        async () => ({
          audit: await onTopic(AUDIT_TOPIC),
          outbox: Number((await t.db.query('SELECT count(*) AS n FROM audit.outbox')).rows[0].n),
          events: await onTopic('platform.tally.events'),
        }),
        (s) => s.audit === 3 && s.outbox === 0 && s.events === 1,
        // the event is readable once no transaction older than it runs on the server (another test file's may)
        { timeoutMs: 60_000, what: 'the audit records and the event published' },
      );
      const { rows } = await t.db.query<{ state: string; xid: string | null; xmin: string | null }>(
        `SELECT state, backend_xid::text AS xid, backend_xmin::text AS xmin FROM pg_stat_activity
          WHERE datname = current_database() AND application_name = 'relay-core-test/relay-leader'`,
      );
      expect(rows).toEqual([
        { state: 'idle', xid: null, xmin: null },
        { state: 'idle', xid: null, xmin: null },
      ]);
    } finally {
      await audit.stop();
      await events.stop();
    }
  });
});

describe('when a relay reads again', () => {
  /** a source of `items` records, counting its reads; done() resolves `published` */
  const counted = (items: number) => {
    let left = items;
    let published: () => void = () => undefined;
    const source = {
      name: `relay-core-test-${Math.random()}`,
      reads: 0,
      published: new Promise<void>((resolve) => {
        published = resolve;
      }),
      async read(limit: number) {
        source.reads += 1;
        const n = Math.min(left, limit);
        left -= n;
        return Array.from({ length: n }, (_, i) => i);
      },
      recordOf: (i: number) => ({ topic: AUDIT_TOPIC, record: { key: `k${i}`, value: String(i) } }),
      async done() {
        published();
      },
    };
    return source;
  };
  const readsAfterOneBatch = async (items: number, again: RelayOptions['again']) => {
    const source = counted(items);
    const relay = new Relay(pool, log, logger, source, {
      batchSize: 2,
      idleMs: 60_000,
      again,
      failure: { message: 'relay-core test cannot publish', every: 1 },
    }).start();
    try {
      await source.published;
      // deliberate: a read that should not come at once (the next look is idleMs = 60 s away)
      await new Promise((r) => setTimeout(r, 500));
      return source.reads;
    } finally {
      await relay.stop();
    }
  };

  it('reads again at once after any published batch by default', async () => {
    expect(await readsAfterOneBatch(1, undefined)).toBe(2);
  });

  it("waits idleMs after a batch that was not full with again: 'after a full batch' (the audit relay), not after a full one", async () => {
    expect(await readsAfterOneBatch(1, 'after a full batch')).toBe(1);
    expect(await readsAfterOneBatch(2, 'after a full batch')).toBe(2);
  });
});
