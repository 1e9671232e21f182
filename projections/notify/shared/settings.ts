import { z } from 'zod';
import { loadSettingsSection, wholeNumber } from '../../../infra/config';

const base64url = (bytes: number) =>
  z
    .string()
    .regex(/^[A-Za-z0-9_-]+$/, 'expected base64url (no padding)')
    .refine((v) => Buffer.from(v, 'base64url').length === bytes, `expected ${bytes} bytes in base64url`);

/** the notification variables (spec 002, Limits, and what it leaves open); read from the environment once per process */
export const NotifySettingsSchema = z
  .object({
    NOTIFY_RATE_LIMIT_PER_TENANT: wholeNumber(100, 1, 1_000_000_000),
    NOTIFY_RATE_LIMIT_PER_MODULE: wholeNumber(50, 1, 1_000_000_000),
    NOTIFY_QUEUE_MAX_PER_TENANT: wholeNumber(10_000, 1, 1_000_000_000),
    NOTIFY_HISTORY_RETENTION_DAYS: wholeNumber(90, 1, 3650),
    NOTIFY_FAILED_RETENTION_DAYS: wholeNumber(180, 1, 3650),
    NOTIFY_ATTEMPT_TIMEOUT_SEC: wholeNumber(10, 1, 300),
    /** how long a worker sleeps when nothing is due (new work wakes it at once) */
    NOTIFY_POLL_INTERVAL_MS: wholeNumber(1000, 10, 60_000),
    /** notifications one worker loop claims at once, and loops per worker process */
    NOTIFY_WORKER_BATCH: wholeNumber(50, 1, 1000),
    NOTIFY_WORKER_CONCURRENCY: wholeNumber(2, 1, 32),
    NOTIFY_VAPID_PUBLIC_KEY: base64url(65).optional(),
    NOTIFY_VAPID_PRIVATE_KEY: base64url(32).optional(),
    NOTIFY_VAPID_SUBJECT: z
      .string()
      .regex(/^(mailto:|https:\/\/)\S+$/, 'expected a mailto: or https: URL')
      .optional(),
  })
  .superRefine((s, ctx) => {
    if (Boolean(s.NOTIFY_VAPID_PUBLIC_KEY) !== Boolean(s.NOTIFY_VAPID_PRIVATE_KEY)) {
      ctx.addIssue({
        code: 'custom',
        path: [s.NOTIFY_VAPID_PUBLIC_KEY ? 'NOTIFY_VAPID_PRIVATE_KEY' : 'NOTIFY_VAPID_PUBLIC_KEY'],
        message: 'NOTIFY_VAPID_PUBLIC_KEY and NOTIFY_VAPID_PRIVATE_KEY are set together',
      });
    }
  });

export interface NotifySettings {
  ratePerTenant: number;
  ratePerModule: number;
  queueMaxPerTenant: number;
  historyRetentionDays: number;
  failedRetentionDays: number;
  attemptTimeoutMs: number;
  /** a claim's lease: the attempt's deadline and a margin; a lease past due is queued again (the worker is presumed lost) */
  leaseMs: number;
  pollIntervalMs: number;
  workerBatch: number;
  workerConcurrency: number;
  vapid: { publicKey: string; privateKey: string } | null;
  vapidSubject: string | null;
}

export const loadNotifySettings = (env: NodeJS.ProcessEnv = process.env): NotifySettings => {
  const s = loadSettingsSection(NotifySettingsSchema, (k) => k.startsWith('NOTIFY_'), 'NOTIFY', env);
  return {
    ratePerTenant: s.NOTIFY_RATE_LIMIT_PER_TENANT,
    ratePerModule: s.NOTIFY_RATE_LIMIT_PER_MODULE,
    queueMaxPerTenant: s.NOTIFY_QUEUE_MAX_PER_TENANT,
    historyRetentionDays: s.NOTIFY_HISTORY_RETENTION_DAYS,
    failedRetentionDays: s.NOTIFY_FAILED_RETENTION_DAYS,
    attemptTimeoutMs: s.NOTIFY_ATTEMPT_TIMEOUT_SEC * 1000,
    leaseMs: s.NOTIFY_ATTEMPT_TIMEOUT_SEC * 1000 + 20_000,
    pollIntervalMs: s.NOTIFY_POLL_INTERVAL_MS,
    workerBatch: s.NOTIFY_WORKER_BATCH,
    workerConcurrency: s.NOTIFY_WORKER_CONCURRENCY,
    vapid:
      s.NOTIFY_VAPID_PUBLIC_KEY && s.NOTIFY_VAPID_PRIVATE_KEY
        ? { publicKey: s.NOTIFY_VAPID_PUBLIC_KEY, privateKey: s.NOTIFY_VAPID_PRIVATE_KEY }
        : null,
    vapidSubject: s.NOTIFY_VAPID_SUBJECT ?? null,
  };
};
