import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { v7 as uuidv7 } from 'uuid';
import { eventRecord } from '../../../infra/events/envelope';
import { Invalidations, type PublishedEvent } from '../../../infra/invalidations';
import { KafkaLog } from '../../../infra/log/kafka-log';
import { PgLog } from '../../../infra/log/pg-log';
import type { LogPort } from '../../../infra/log/port';
import { createLogger } from '../../../infra/observability/logger';
import { createTestDatabase, type TestDatabase } from '../../support/db';
import { requireEnv } from '../../support/env';
import { captureLogger } from '../../support/log-capture';
import { RETENTION_WEEK, waitFor } from './harness';

const logger = createLogger({ name: 'invalidations-test', level: process.env.LOG_LEVEL ?? 'silent' });
let database: TestDatabase | undefined;
afterAll(async () => {
  await database?.drop();
});

/** a domain of its own per test, so its topic holds only this test's events */
const domain = () => `inv${randomBytes(4).toString('hex')}`;
const published = (type: string, payload: Record<string, unknown> = {}) =>
  eventRecord(
    {
      eventId: uuidv7(),
      type,
      source: 'test',
      tenantId: 't1',
      traceId: randomBytes(16).toString('hex'),
      timestamp: new Date().toISOString(),
      schemaVersion: '1.0.0',
      payload,
    },
    'entity-1',
  );

const adapters: [string, () => Promise<LogPort>][] = [
  [
    'postgres',
    async () =>
      new PgLog((database ??= await createTestDatabase('inv')).db, {
        pollIntervalMs: 50,
        rebalanceIntervalMs: 250,
        logger,
      }),
  ],
  [
    'kafka',
    async () =>
      new KafkaLog({ brokers: requireEnv('TEST_KAFKA_BROKERS').split(','), clientId: 'invalidations-test', logger }),
  ],
];

describe.each(adapters)('cache invalidation through the %s log', (_name, open) => {
  it('gives every process (two here) the events of the types it asked for, from the moment it subscribed', async () => {
    const log = await open();
    const d = domain();
    const topic = `platform.${d}.events`;
    await log.ensureTopics([{ name: topic, partitions: 3, retentionMs: RETENTION_WEEK }]);
    await log.publish(topic, [published(`${d}.plan.changed`, { n: 0 })]); // before anyone listened: nobody gets it
    const seen: [string, PublishedEvent][] = [];
    const one = new Invalidations(log, logger);
    const two = new Invalidations(log, logger);
    try {
      one.on([`${d}.plan.changed`], (e) => {
        seen.push(['one', e]);
      });
      two.on([`${d}.plan.changed`, `${d}.limit.changed`], (e) => {
        seen.push(['two', e]);
      });
      await Promise.all([one.ready(), two.ready()]);
      // a new group's first fetch may still be resolving "latest" (log contract): publish until both hear
      const heard = (who: string) => seen.some(([w]) => w === who);
      for (let round = 1; !(heard('one') && heard('two')) && round < 100; round += 1) {
        await log.publish(topic, [
          published(`${d}.plan.changed`, { n: round }),
          published(`${d}.other.happened`, { n: round }),
          published(`${d}.limit.changed`, { n: round }),
        ]);
        await waitFor(() => heard('one') && heard('two'), 'both processes', 300).catch(() => undefined);
      }
      const kinds = (who: string) => new Set(seen.filter(([w]) => w === who).map(([, e]) => e.type.split('.')[1]));
      expect([...kinds('one')]).toEqual(['plan']);
      expect([...kinds('two')].sort()).toEqual(expect.arrayContaining(['plan']));
      expect(kinds('two').has('other')).toBe(false);
      expect(seen.every(([, e]) => e.payload.n !== 0)).toBe(true);
      expect(seen[0]![1]).toMatchObject({ tenantId: 't1', eventId: expect.any(String) });
    } finally {
      await Promise.all([one.close(), two.close()]);
      await log.close();
    }
  });

  it('logs a failing handler and a record that is not JSON, and goes on with the next ones', async () => {
    const log = await open();
    const d = domain();
    const topic = `platform.${d}.events`;
    await log.ensureTopics([{ name: topic, partitions: 1, retentionMs: RETENTION_WEEK }]);
    const capture = captureLogger();
    const invalidations = new Invalidations(log, capture.logger);
    const seen: number[] = [];
    try {
      invalidations.on([`${d}.plan.changed`], (e) => {
        if (e.payload.n === 1) throw new Error('handler broke');
        seen.push(Number(e.payload.n));
      });
      await invalidations.ready();
      for (let round = 1; seen.length === 0 && round < 100; round += 1) {
        await log.publish(topic, [
          published(`${d}.plan.changed`, { n: 1 }),
          { key: 'entity-1', value: 'not json', headers: { type: `${d}.plan.changed` } },
          published(`${d}.plan.changed`, { n: 2 }),
        ]);
        await waitFor(() => seen.length > 0, 'the event after the failures', 300).catch(() => undefined);
      }
      expect(new Set(seen)).toEqual(new Set([2]));
      expect(capture.lines.map((l) => l.msg)).toEqual(
        expect.arrayContaining([
          'cache invalidation handler failed',
          'an event on the log is not an Event; no invalidation',
        ]),
      );
    } finally {
      await invalidations.close();
      await log.close();
    }
  });
});
