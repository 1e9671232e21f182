import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configureNotify } from '../../../commands/notify/context';
import { mergeServiceParts } from '../../../infra/services';
import type { TestPlatform } from '../../support/platform';
import { startTestPlatform } from '../../support/platform';
import type { SmtpCapture } from '../../support/smtp-capture';
import { startSmtpCapture } from '../../support/smtp-capture';
import {
  clamdEnv,
  EICAR,
  eventually,
  filesClient,
  filesServices,
  seedOwner,
  testBucket,
  uniqueTenant,
  waitForStatus,
} from '../../support/files';
import { notifyServices } from '../../support/notify';

/**
 * With the notification service installed, an infected upload reaches the tenant's Owners through
 * it (kernel.notifications): queued by user id, delivered by the notify workers, kept in the
 * history under module files. (Without it, the mail port sends it: tests/int/files/uploads.spec.ts.)
 */
let smtp: SmtpCapture;
let p: TestPlatform;
const bucket = testBucket();

beforeAll(async () => {
  smtp = await startSmtpCapture();
  p = await startTestPlatform({
    services: mergeServiceParts({
      write: [...filesServices.write, ...notifyServices.write],
      read: [...filesServices.read, ...notifyServices.read],
      projections: [...new Set([...filesServices.projections, ...notifyServices.projections])],
      workers: [...filesServices.workers, ...notifyServices.workers],
      people: filesServices.people,
    }),
    env: { ...bucket.env, ...clamdEnv(), SMTP_URL: smtp.url, FILES_WORKER_POLL_MS: '50' },
  });
  configureNotify(p.kernel, { settings: { pollIntervalMs: 20 } });
});
afterAll(async () => {
  await p?.close();
  await smtp?.close();
  await bucket.drop();
});

describe('an infected upload, with the notification service', () => {
  it('is reported to each Owner through the service, by user id, in the history of module files', async () => {
    expect(p.kernel.notifications.kind).toBe('notify');
    const tenant = uniqueTenant('notices');
    await seedOwner(p.kernel.db, tenant, `u-owner-${tenant}`, `owner@${tenant}.test`);
    const c = filesClient(p.url, tenant);
    const answer = await c.upload(EICAR, { originalName: 'tool.com' });
    await waitForStatus(c, answer.body.id, 'rejected');
    const mail = await smtp.waitFor((m) => m.envelope.to.includes(`owner@${tenant}.test`), 20_000);
    expect(mail.parsed.subject).toMatch(/malware/i);
    expect(mail.parsed.text).toContain(answer.body.id as string);
    const notificationId = mail.parsed.headers.get('x-notification-id');
    expect(notificationId).toEqual(expect.any(String));
    const row = await eventually(async () =>
      (
        await p.kernel.db.query<{
          status: string;
          module: string;
          purpose: string;
          priority: string;
          recipient_user_id: string;
        }>(
          'SELECT status, module, purpose, priority, recipient_user_id FROM rm.notify_notifications WHERE tenant_id = $1 AND id = $2',
          [tenant, notificationId],
        )
      ).rows.find((r) => r.status === 'delivered'),
    );
    expect(row).toEqual({
      status: 'delivered',
      module: 'files',
      purpose: 'file-infected',
      priority: 'high',
      recipient_user_id: `u-owner-${tenant}`,
    });
  });
});
