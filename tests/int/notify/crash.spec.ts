import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestDatabase } from '../../support/db';
import { createTestDatabase } from '../../support/db';
import type { TestPlatform } from '../../support/platform';
import { startTestPlatform } from '../../support/platform';
import type { PlatformProcess } from '../../support/process';
import { freePort, runPlatform, waitFor } from '../../support/process';
import { startClickHouse, stopRole } from '../../support/split';
import type { SmtpCapture } from '../../support/smtp-capture';
import { startSmtpCapture } from '../../support/smtp-capture';
import { configureNotify } from '../../../commands/notify/context';
import {
  eventsOf,
  eventually,
  notifyClient,
  notifyHttpServices,
  notifyServices,
  statusCounts,
} from '../../support/notify';

/**
 * At-least-once delivery through a crash: a worker process is killed (SIGKILL) while it waits for
 * the SMTP server's answer; another worker finds its claims (its session lock is gone) and sends
 * them again, marked as possible duplicates with the same Message-ID — nothing is lost, and only
 * the mails whose answer the dead worker never saw can arrive twice.
 */
let database: TestDatabase;
let smtp: SmtpCapture;
/** `platform serve` needs the ClickHouse every role shares (the platform has audit views) */
let clickhouse: Awaited<ReturnType<typeof startClickHouse>>;
let api: TestPlatform;
let worker: PlatformProcess | null = null;
let survivor: TestPlatform | null = null;

beforeAll(async () => {
  database = await createTestDatabase('crash');
  smtp = await startSmtpCapture();
  clickhouse = await startClickHouse(join(tmpdir(), `platform-crash-ch-${process.pid}`));
  api = await startTestPlatform({ services: notifyHttpServices, database });
});
afterAll(async () => {
  if (worker && worker.child.exitCode === null) worker.child.kill('SIGKILL');
  await survivor?.close();
  await api?.close();
  await smtp?.close();
  if (clickhouse) {
    await stopRole(clickhouse.process);
    rmSync(clickhouse.folder, { recursive: true, force: true });
  }
  await database?.drop();
});

const idOf = (m: SmtpCapture['messages'][number]) => m.parsed.headers.get('x-notification-id') as string;

describe('a delivery worker killed mid-send and replaced', () => {
  it('delivers every notification; only those it was sending when killed arrive twice, marked as possible duplicates', async () => {
    const port = await freePort();
    worker = runPlatform(
      ['serve', 'workers'],
      {
        DATABASE_URL: database.url,
        ROOT_URL: 'http://127.0.0.1:0',
        PLATFORM_ENV: 'test',
        LOG_LEVEL: 'warn',
        DATA_DIR: join(tmpdir(), `platform-crash-${process.pid}`),
        SMTP_URL: smtp.url,
        CLICKHOUSE_URL: clickhouse.url,
        NOTIFY_POLL_INTERVAL_MS: '20',
        NOTIFY_WORKER_BATCH: '5',
        NOTIFY_WORKER_CONCURRENCY: '1',
        NOTIFY_RATE_LIMIT_PER_TENANT: '10000',
      },
      port,
    );
    await waitFor(`${worker.url}/ready`, 200, 60_000);

    // every answer to DATA comes 1.5 s after the message arrived: the worker is mid-send most of the time
    smtp.behaviour.delayMs = 1_500;
    const c = notifyClient(api.url, 'crash');
    const accepted = await c.post('/notify/batch', {
      channel: 'email',
      subject: 'crash test',
      body: 'x',
      recipients: Array.from({ length: 30 }, (_, i) => ({ address: `r${i}@example.test` })),
    });
    expect(accepted.status).toBe(202);
    const ids: string[] = accepted.body.ids;

    // two batches answered and recorded, the third one sent and waiting for its answers
    await eventually(
      async () => ((await statusCounts(database.db, 'crash')).delivered ?? 0) >= 10,
      '10 delivered',
      60_000,
    );
    await eventually(async () => smtp.messages.length >= 15, 'a third batch at the SMTP server', 30_000);
    worker.child.kill('SIGKILL');
    expect(await worker.exited).toBeNull();
    const before = await statusCounts(database.db, 'crash');
    const deliveredBefore = (
      await database.db.query<{ id: string }>(
        `SELECT id FROM rm.notify_notifications WHERE tenant_id = 'crash' AND status = 'delivered'`,
      )
    ).rows.map((r) => r.id);
    expect(before.sending).toBeGreaterThan(0);
    const receivedBefore = new Set(smtp.messages.map(idOf));

    // a new worker (in this process) takes over at once: the dead one's session lock is gone, no lease has to run out
    smtp.behaviour.delayMs = 0;
    survivor = await startTestPlatform({
      role: 'workers',
      services: notifyServices,
      database,
      env: { SMTP_URL: smtp.url },
    });
    configureNotify(survivor.kernel, { settings: { pollIntervalMs: 20, ratePerTenant: 10_000 } });
    await eventually(
      async () => (await statusCounts(database.db, 'crash')).delivered === 30,
      'all 30 delivered',
      30_000,
    );

    const copies = new Map<string, SmtpCapture['messages'][number][]>();
    for (const m of smtp.messages) copies.set(idOf(m), [...(copies.get(idOf(m)) ?? []), m]);
    // none lost
    expect(new Set(copies.keys())).toEqual(new Set(ids));
    // what was recorded as delivered before the kill was never sent again
    for (const id of deliveredBefore) expect(copies.get(id), id).toHaveLength(1);
    const twice = [...copies].filter(([, mails]) => mails.length > 1);
    for (const [id, mails] of twice) {
      expect(mails, id).toHaveLength(2);
      expect(receivedBefore.has(id)).toBe(true);
      expect(mails[0]!.parsed.messageId).toBe(mails[1]!.parsed.messageId);
      expect(mails[1]!.parsed.headers.get('x-notification-possible-duplicate')).toBe('true');
      expect(mails[1]!.parsed.headers.get('x-notification-attempt')).toBe('2');
    }
    // at most the batch the dead worker held
    expect(twice.length).toBeLessThanOrEqual(5);
    expect(twice.length).toBeGreaterThan(0);
    const [interrupted] = twice;
    const events = await eventsOf(database.db, 'crash', interrupted![0]);
    expect(events.map((e) => e.type)).toEqual([
      'notify.notification.queued',
      'notify.notification.sending',
      'notify.notification.attempt_failed',
      'notify.notification.sending',
      'notify.notification.sent',
    ]);
    expect(events[2]!.data).toMatchObject({ interrupted: true, retryInMs: 0 });
    expect(events[4]!.data).toMatchObject({ possibleDuplicate: true, attempt: 2 });
  });
});
