import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { namespacedLog } from '../../../infra/log/namespaced';
import { PgLog } from '../../../infra/log/pg-log';
import { partitionLockName } from '../../../infra/log/pg-log-session';
import { createLogger } from '../../../infra/observability/logger';
import { createTestDatabase, type TestDatabase } from '../../support/db';
import { describeLogContract } from './contract';
import { event, join, newTopic, sleep, uniqueName } from './harness';
import { pollUntil } from '../../support/poll';

// Silent unless LOG_LEVEL asks otherwise: one contract test makes a handler fail on purpose.
const logger = createLogger({ name: 'pg-log-test', level: process.env.LOG_LEVEL ?? 'silent' });
const fastOptions = { pollIntervalMs: 50, rebalanceIntervalMs: 250, logger };

let database: TestDatabase | undefined;
const waitFor = async (condition: () => Promise<boolean>): Promise<void> => {
  await pollUntil(condition, Boolean, { timeoutMs: 10_000, everyMs: 20 });
};

const openDatabase = async (): Promise<TestDatabase> => (database ??= await createTestDatabase('log_test'));
afterAll(async () => {
  await database?.drop();
});

describeLogContract('postgres', async () => new PgLog((await openDatabase()).db, fastOptions));
// KAFKA_NAMESPACE's wrapper (infra/log/namespaced.ts) keeps the whole contract, over any log
describeLogContract('postgres under a namespace', async () =>
  namespacedLog(new PgLog((await openDatabase()).db, fastOptions), `${uniqueName('ns')}.`),
);

describe('the postgres log, beyond the contract', () => {
  let db: pg.Pool;
  let log: PgLog;

  beforeAll(async () => {
    db = (await openDatabase()).db;
    log = new PgLog(db, fastOptions);
  });
  afterAll(async () => {
    await log?.close();
  });

  describe('a subscriber idle between polls', () => {
    it('is woken by the NOTIFY of a commit, well before its poll interval', async () => {
      const slowPolling = new PgLog(db, { ...fastOptions, pollIntervalMs: 10_000 });
      const topic = await newTopic(slowPolling, 1);
      const member = await join(slowPolling, uniqueName('group'), [topic]);
      await sleep(200); // deliberately: the member must be idle, waiting out its 10 s poll, when the commit lands

      const publishedAt = Date.now();
      await slowPolling.publish(topic, [event('k', 0)]);
      await member.until(1);
      const latency = Date.now() - publishedAt;
      await slowPolling.close();

      expect(latency).toBeLessThan(2_000);
    });
  });

  describe('a partition held by a member whose process died', () => {
    it('is taken over by another member, from the last committed offset', async () => {
      const topic = await newTopic(log, 1);
      await log.publish(
        topic,
        [0, 1, 2, 3, 4, 5].map((seq) => event('k', seq)),
      );
      const group = uniqueName('group');
      await log.seek(group, topic, { offset: 3 });
      // The dead member: a bare connection holding the partition's lock, as a member's session does.
      const holder = new pg.Client(db.options);
      holder.on('error', () => undefined);
      await holder.connect();
      await holder.query('select pg_advisory_lock(hashtextextended($1, 0))', [partitionLockName(group, topic, 0)]);
      const { rows } = await holder.query<{ pid: number }>('select pg_backend_pid() as pid');

      const survivor = await join(log, group, [topic]);
      await sleep(600); // deliberately let a dozen polls pass: none may read the held partition
      const whileHeld = survivor.records.length;
      await db.query('select pg_terminate_backend($1)', [rows[0]!.pid]);
      await survivor.until(3);
      await survivor.stop();

      expect(whileHeld).toBe(0);
      expect(survivor.ids()).toEqual(['0:3', '0:4', '0:5']);
    });
  });

  describe('a member whose own connection drops', () => {
    it('reports it, reconnects and carries on after its last commit', async () => {
      const failures: string[] = [];
      const recording = { ...logger, error: (_: object, msg?: string) => void failures.push(msg ?? '') };
      const resilient = new PgLog(db, { ...fastOptions, logger: recording });
      const topic = await newTopic(resilient, 1);
      const group = uniqueName('group');
      const member = await join(resilient, group, [topic]);
      await resilient.publish(
        topic,
        [0, 1, 2].map((seq) => event('k', seq)),
      );
      await member.until(3);
      await waitFor(async () => (await resilient.positions(group, topic))[0]?.currentOffset === 3);

      await db.query(
        `select pg_terminate_backend(pid) from pg_stat_activity
          where datname = current_database() and application_name like '%/log-member'`,
      );
      await resilient.publish(
        topic,
        [3, 4, 5].map((seq) => event('k', seq)),
      );
      await member.until(6);
      await resilient.close();

      expect(member.ids()).toEqual(['0:0', '0:1', '0:2', '0:3', '0:4', '0:5']);
      expect(failures).toContain('log subscription failed; retrying from the committed offsets');
    });
  });

  describe('two members that joined before any record', () => {
    it('share the partitions between them', async () => {
      const topic = await newTopic(log, 4);
      const group = uniqueName('group');
      const a = await join(log, group, [topic]);
      const b = await join(log, group, [topic]);
      // deliberately a few rebalance intervals (250 ms): the handover is not observable before records flow
      await sleep(1_000);

      await log.publish(
        topic,
        Array.from({ length: 40 }, (_, i) => event(`entity-${i}`, i)),
      );
      const seen = () => a.records.length + b.records.length;
      await pollUntil(
        async () => seen(),
        (n) => n >= 40,
        { timeoutMs: 30_000, what: 'the 40 records' },
      );
      await Promise.all([a.stop(), b.stop()]);

      const partitionsOf = (records: { partition: number }[]) => new Set(records.map((r) => r.partition));
      expect(partitionsOf(a.records).size).toBe(2);
      expect(partitionsOf(b.records).size).toBe(2);
      expect([...partitionsOf(a.records)].filter((p) => partitionsOf(b.records).has(p))).toEqual([]);
    });
  });

  describe('records older than their retention', () => {
    it('are purged as a prefix of the partition, and their offsets are never reused', async () => {
      const topic = uniqueName('retention');
      await log.ensureTopics([{ name: topic, partitions: 1, retentionMs: 60_000 }]);
      const now = Date.now();
      await log.publish(topic, [
        event('k', 0, { timestamp: now - 180_000 }),
        event('k', 1, { timestamp: now - 120_000 }),
        event('k', 2, { timestamp: now - 1_000 }),
        event('k', 3, { timestamp: now - 90_000 }), // old, but after a kept record: kept, as Kafka keeps a segment
      ]);

      expect(await log.purgeExpired({ now, topics: [topic] })).toBe(2);
      await log.publish(topic, [event('k', 4)]);

      expect((await log.read(topic, 0, 0, 10)).map((r) => r.offset)).toEqual([2, 3, 4]);
      expect((await log.positions(uniqueName('g'), topic))[0]).toMatchObject({ logEndOffset: 5 });
      const member = await join(log, uniqueName('group'), [topic]);
      await member.until(3);
      await member.stop();
      expect(member.ids()).toEqual(['0:2', '0:3', '0:4']);
    });

    it('leave an unexpired partition alone', async () => {
      const topic = await newTopic(log, 2);
      await log.publish(topic, [event('a', 0), event('b', 0)]);

      expect(await log.purgeExpired({ topics: [topic] })).toBe(0);
    });
  });

  describe('a group whose member stopped', () => {
    it('leaves no member behind to count', async () => {
      const topic = await newTopic(log, 2);
      const group = uniqueName('group');
      const member = await join(log, group, [topic]);
      await member.stop();

      const { rows } = await db.query('select 1 from log.group_members where group_id = $1', [group]);
      expect(rows).toEqual([]);
    });
  });

  describe('an unreachable database', () => {
    it('fails the ping within its timeout', async () => {
      const nowhere = new pg.Pool({
        host: '127.0.0.1',
        port: 1,
        user: 'x',
        database: 'x',
        connectionTimeoutMillis: 500,
      });
      const unreachable = new PgLog(nowhere, { pingTimeoutMs: 1_000 });

      await expect(unreachable.ping()).rejects.toThrow();
      await nowhere.end();
    });
  });
});
