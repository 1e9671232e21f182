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

describe('when a batch is full and its source can read past an item not yet done', () => {
  /** items 0…n-1; what happens is written to `steps` in the order it happens */
  const ordered = (n: number, steps: string[]) => {
    let doneUpTo = -1;
    const after = (last: number, limit: number) =>
      Array.from({ length: Math.max(0, Math.min(limit, n - last - 1)) }, (_, i) => last + 1 + i);
    return {
      name: `relay-core-ahead-${Math.random()}`,
      async read(limit: number) {
        steps.push(`read after ${doneUpTo}`);
        return after(doneUpTo, limit);
      },
      async readAfter(last: number, limit: number) {
        steps.push(`read ahead after ${last}`);
        return after(last, limit);
      },
      recordOf: (i: number) => ({ topic: AUDIT_TOPIC, record: { key: 'one-key', value: String(i) } }),
      async done(items: number[]) {
        doneUpTo = items[items.length - 1]!;
        steps.push(`done ${items.join(',')}`);
      },
    };
  };
  /** the test's PostgreSQL log, whose publishes are written to steps; `fail` refuses the next one after publishing it */
  const watched = (steps: string[]) => {
    const state = { failNext: false };
    const port = Object.assign(Object.create(log) as PgLog, {
      publish: async (topic: string, records: { value: string }[]) => {
        steps.push(`publish ${records.map((r) => r.value).join(',')}`);
        await log.publish(topic, records as Parameters<PgLog['publish']>[1]);
        if (state.failNext) {
          state.failNext = false;
          throw new Error('the log refused');
        }
      },
    });
    return { port, state };
  };
  const relayOf = (port: PgLog, source: ReturnType<typeof ordered>) =>
    new Relay(pool, port, logger, source, {
      batchSize: 2,
      idleMs: 60_000,
      failure: { message: 'relay-core test cannot publish', every: 1 },
    });

  it('reads the next batch while this one publishes, and publishes it only once this one is done', async () => {
    const steps: string[] = [];
    const { port } = watched(steps);
    const relay = relayOf(port, ordered(5, steps));
    while ((await relay.runOnce()) > 0) {
      /* drain */
    }
    expect(steps).toEqual([
      'read after -1',
      'read ahead after 1',
      'publish 0,1',
      'done 0,1',
      'read ahead after 3',
      'publish 2,3',
      'done 2,3',
      'publish 4', // not full: nothing read ahead
      'done 4',
      'read after 4',
    ]);
  });

  it('drops the batch read ahead when the publish fails: the same batch is published again, then the next', async () => {
    const steps: string[] = [];
    const { port, state } = watched(steps);
    const relay = relayOf(port, ordered(4, steps));
    state.failNext = true;
    await expect(relay.runOnce()).rejects.toThrow('the log refused');
    while ((await relay.runOnce()) > 0) {
      /* drain */
    }
    expect(steps).toEqual([
      'read after -1',
      'read ahead after 1',
      'publish 0,1',
      'read after -1', // not the batch read ahead: 0 and 1 were never done
      'read ahead after 1',
      'publish 0,1',
      'done 0,1',
      'read ahead after 3',
      'publish 2,3',
      'done 2,3', // the read ahead after 3 found nothing: the drain ends on it
    ]);
  });
});
