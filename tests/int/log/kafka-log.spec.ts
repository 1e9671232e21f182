import { ConfigResourceTypes, Kafka, logLevel } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KafkaLog } from '../../../infra/log/kafka-log';
import { namespacedLog } from '../../../infra/log/namespaced';
import type { LogRecord } from '../../../infra/log/port';
import { createLogger } from '../../../infra/observability/logger';
import { requireEnv } from '../../support/env';
import { describeLogContract } from './contract';
import { event, uniqueName, waitFor } from './harness';

// Silent unless LOG_LEVEL asks otherwise: one contract test makes a handler fail on purpose.
const logger = createLogger({ name: 'kafka-log-test', level: process.env.LOG_LEVEL ?? 'silent' });
const brokers = () => requireEnv('TEST_KAFKA_BROKERS').split(',');

describeLogContract('kafka', async () => new KafkaLog({ brokers: brokers(), clientId: 'log-contract', logger }));
// The namespace wrapper is the same over any log: its whole contract runs over PostgreSQL's
// (pg-log.spec.ts, fast); on Kafka, two namespaces share one cluster below.

describe('two platforms sharing one Kafka under their own namespaces', () => {
  it('publish to and consume the same topic names without seeing each other, and get their own names back', async () => {
    const [a, b] = ['a', 'b'].map((side) =>
      namespacedLog(new KafkaLog({ brokers: brokers(), clientId: `ns-${side}`, logger }), `${uniqueName(side)}.`),
    ) as [ReturnType<typeof namespacedLog>, ReturnType<typeof namespacedLog>];
    try {
      const topic = 'platform.shared.events';
      for (const log of [a, b]) await log.ensureTopics([{ name: topic, partitions: 1, retentionMs: 3_600_000 }]);
      await a.publish(topic, [event('k', 1)]);
      await b.publish(topic, [event('k', 2), event('k', 3)]);
      const seen: Record<string, LogRecord[]> = { a: [], b: [] };
      const subs = await Promise.all(
        (
          [
            ['a', a],
            ['b', b],
          ] as const
        ).map(([side, log]) =>
          log.subscribe({
            groupId: 'same.group',
            topics: [topic],
            start: 'earliest',
            eachBatch: async (records) => {
              seen[side]!.push(...records);
            },
          }),
        ),
      );
      await waitFor(() => seen.a!.length === 1 && seen.b!.length === 2, 'each side reads its own records');
      expect(seen.a!.map((r) => r.topic)).toEqual([topic]);
      expect((await a.read(topic, 0, 0, 10)).map((r) => r.topic)).toEqual([topic]);
      await Promise.all(subs.map((s) => s.stop()));
      expect((await b.positions('same.group', topic))[0]?.currentOffset).toBe(2);
    } finally {
      await a.close();
      await b.close();
    }
  });
});

describe('the kafka log, beyond the contract', () => {
  let log: KafkaLog;

  beforeAll(() => {
    log = new KafkaLog({ brokers: brokers(), clientId: 'log-kafka-spec', logger });
  });
  afterAll(async () => {
    await log?.close();
  });

  describe('a topic created by ensureTopics', () => {
    it('carries its retention as retention.ms', async () => {
      const topic = uniqueName('retention');
      await log.ensureTopics([{ name: topic, partitions: 2, retentionMs: 3_600_000 }]);

      const admin = new Kafka({ brokers: brokers(), logLevel: logLevel.NOTHING }).admin();
      await admin.connect();
      const { resources } = await admin.describeConfigs({
        includeSynonyms: false,
        resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configNames: ['retention.ms'] }],
      });
      await admin.disconnect();

      expect(resources[0]?.configEntries.find((e) => e.configName === 'retention.ms')?.configValue).toBe('3600000');
    });
  });

  describe('a broker that does not answer', () => {
    it('fails the ping within its timeout', async () => {
      const unreachable = new KafkaLog({
        brokers: ['127.0.0.1:1'],
        pingTimeoutMs: 1_500,
        logger,
        kafka: { connectionTimeout: 300, retry: { retries: 0 } },
      });

      const started = Date.now();
      await expect(unreachable.ping()).rejects.toThrow();
      expect(Date.now() - started).toBeLessThan(3_000);
      await unreachable.close();
    });
  });
});
