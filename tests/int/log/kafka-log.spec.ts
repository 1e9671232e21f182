import { ConfigResourceTypes, Kafka, logLevel } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KafkaLog } from '../../../infra/log/kafka-log';
import { createLogger } from '../../../infra/observability/logger';
import { requireEnv } from '../../support/env';
import { describeLogContract } from './contract';
import { uniqueName } from './harness';

// Silent unless LOG_LEVEL asks otherwise: one contract test makes a handler fail on purpose.
const logger = createLogger({ name: 'kafka-log-test', level: process.env.LOG_LEVEL ?? 'silent' });
const brokers = () => requireEnv('TEST_KAFKA_BROKERS').split(',');

describeLogContract('kafka', async () => new KafkaLog({ brokers: brokers(), clientId: 'log-contract', logger }));

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
