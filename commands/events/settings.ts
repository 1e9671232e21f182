import { z } from 'zod';
import { loadSettingsSection, wholeNumber } from '../../infra/config';

/** the event bus variables (spec 002, Limits, and what it leaves open); read from the environment once per process */
export const EventsSettingsSchema = z.object({
  /** dead letters redelivered per second per tenant by retry and replay-all (spec 002: 50) */
  DLQ_REPLAY_RATE_LIMIT: wholeNumber(50, 1, 100_000),
  /** the wait after a failed delivery attempt: this, then twice this (3 attempts before the DLQ) */
  EVENTS_RETRY_BACKOFF_MS: wholeNumber(1000, 1, 3600_000),
  /** deadline of one webhook delivery */
  EVENTS_WEBHOOK_TIMEOUT_MS: wholeNumber(10_000, 100, 300_000),
  /** delivery loops per worker process, and events handed to a handler per partition and turn */
  EVENTS_DELIVERY_CONCURRENCY: wholeNumber(4, 1, 64),
  EVENTS_DELIVERY_BATCH: wholeNumber(100, 1, 10_000),
  /** entity keys a subscription's turn hands over at once (each key's events one after another; 1: one event at a time) */
  EVENTS_KEY_CONCURRENCY: wholeNumber(16, 1, 256),
  /** how long idle bus workers sleep when no notification wakes them */
  EVENTS_POLL_INTERVAL_MS: wholeNumber(200, 5, 60_000),
  /** the request body of POST /events/publish/batch (413 above; each event's payload is at most 1 MiB whatever this is) */
  EVENTS_BATCH_MAX_BYTES: wholeNumber(16 * 1024 * 1024, 1024 * 1024, 1024 * 1024 * 1024),
  /** events per minute of one tenant on one topic that make a bulk-import spike (lag warnings held back 30 min) */
  EVENTS_BULK_IMPORT_THRESHOLD: wholeNumber(10_000, 1, 1_000_000_000),
  EVENTS_LAG_CHECK_INTERVAL_MS: wholeNumber(30_000, 10, 3600_000),
  /** how long a publish waits for the log to answer before 503 events.broker.unavailable */
  EVENTS_BROKER_TIMEOUT_MS: wholeNumber(2000, 50, 60_000),
  /** task queue: poll interval, a claim's lease (the task's deadline), the first retry wait */
  EVENTS_TASK_POLL_INTERVAL_MS: wholeNumber(500, 5, 60_000),
  EVENTS_TASK_TIMEOUT_SEC: wholeNumber(60, 1, 86_400),
  EVENTS_TASK_BACKOFF_MS: wholeNumber(1000, 1, 3600_000),
});

export interface EventsSettings {
  replayRatePerSecond: number;
  retryBackoffMs: number;
  webhookTimeoutMs: number;
  deliveryConcurrency: number;
  deliveryBatch: number;
  keyConcurrency: number;
  pollIntervalMs: number;
  batchMaxBytes: number;
  bulkImportThreshold: number;
  lagCheckIntervalMs: number;
  brokerTimeoutMs: number;
  taskPollIntervalMs: number;
  taskLeaseMs: number;
  taskBackoffMs: number;
}

export const loadEventsSettings = (env: NodeJS.ProcessEnv = process.env): EventsSettings => {
  const s = loadSettingsSection(
    EventsSettingsSchema,
    (k) => k.startsWith('EVENTS_') || k === 'DLQ_REPLAY_RATE_LIMIT',
    'EVENTS',
    env,
  );
  return {
    replayRatePerSecond: s.DLQ_REPLAY_RATE_LIMIT,
    retryBackoffMs: s.EVENTS_RETRY_BACKOFF_MS,
    webhookTimeoutMs: s.EVENTS_WEBHOOK_TIMEOUT_MS,
    deliveryConcurrency: s.EVENTS_DELIVERY_CONCURRENCY,
    deliveryBatch: s.EVENTS_DELIVERY_BATCH,
    keyConcurrency: s.EVENTS_KEY_CONCURRENCY,
    pollIntervalMs: s.EVENTS_POLL_INTERVAL_MS,
    batchMaxBytes: s.EVENTS_BATCH_MAX_BYTES,
    bulkImportThreshold: s.EVENTS_BULK_IMPORT_THRESHOLD,
    lagCheckIntervalMs: s.EVENTS_LAG_CHECK_INTERVAL_MS,
    brokerTimeoutMs: s.EVENTS_BROKER_TIMEOUT_MS,
    taskPollIntervalMs: s.EVENTS_TASK_POLL_INTERVAL_MS,
    taskLeaseMs: s.EVENTS_TASK_TIMEOUT_SEC * 1000,
    taskBackoffMs: s.EVENTS_TASK_BACKOFF_MS,
  };
};
