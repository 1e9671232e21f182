import type { Config } from '../config';
import type { Logger } from '../observability/logger';
import type { Db } from '../postgres/db';
import type { LogPort } from './port';
import { PgLog } from './pg-log';

/**
 * Kafka when KAFKA_BROKERS is set, otherwise the PostgreSQL-backed log in the platform's own
 * database. kafkajs is loaded only when Kafka is used.
 */
export const createLog = async (config: Config, db: Db, logger: Logger): Promise<LogPort> => {
  if (!config.KAFKA_BROKERS) return new PgLog(db, { logger });
  const { KafkaLog } = await import('./kafka-log');
  const { namespacedLog } = await import('./namespaced');
  return namespacedLog(
    new KafkaLog({ brokers: config.KAFKA_BROKERS.split(','), clientId: config.KAFKA_CLIENT_ID, logger }),
    config.KAFKA_NAMESPACE,
  );
};
