import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { archiveClosedMonths, purgeExpiredArchives, readArchive } from '../../../commands/audit/archive';
import { auditRecord } from '../../../infra/audit';
import { mergeServiceParts } from '../../../infra/services';
import type { Body } from '../../support/audit';
import { auditClient, auditServices, eventually } from '../../support/audit';
import type { TestPlatform } from '../../support/platform';
import { startTestPlatform, tallyServices } from '../../support/platform';

/**
 * Cold storage with the kernel in process: closed months archived per tenant into the object
 * store, an export job restoring from the archive once the hot rows are gone, an anonymization
 * rewriting the archive, and archives deleted after AUDIT_COLD_YEARS.
 */
let platform: TestPlatform;
const tenant = `cold-${randomUUID()}`;
const month = '2026-03';
const DAY = 86_400_000;

beforeAll(async () => {
  platform = await startTestPlatform({ services: mergeServiceParts(tallyServices, auditServices) });
  // records of March, as a service recorded them then (through the pipeline)
  for (let i = 0; i < 40; i += 1) {
    await platform.kernel.audit.record(
      auditRecord(
        {
          action: 'shop.order.placed',
          entityType: 'order',
          entityId: `o-${i}`,
          tenantId: tenant,
          actorId: i % 2 ? 'u-old' : 'u-other',
          actorIp: '10.9.8.7',
          actorUserAgent: 'old-browser/1',
          after: { i },
          timestamp: new Date(Date.parse('2026-03-01T00:00:00Z') + (i * DAY) / 2).toISOString(),
        },
        platform.kernel.ids.next(),
      ),
    );
  }
  const client = auditClient(platform.url, tenant, 'u-owner');
  await eventually(
    async () =>
      (
        await client.call(
          'GET',
          `/audit?entityType=order&page_size=100&since=2026-03-01T00:00:00Z&until=2026-04-01T00:00:00Z`,
        )
      ).body.data.length === 40,
    // the audit consumer may wait on a transaction another test file holds open (the server's xmin)
    60_000,
  );
});
afterAll(async () => platform?.close());

const archives = async () =>
  (
    await platform.kernel.db.query<{ month: string; object_key: string; records: string }>(
      'SELECT month, object_key, records FROM audit.archives WHERE tenant_id = $1',
      [tenant],
    )
  ).rows;

describe('monthly cold archives', () => {
  it('archives a month once it ended more than 7 days ago, not before', async () => {
    expect(await archiveClosedMonths(platform.kernel, new Date('2026-04-05T00:00:00Z'))).not.toContain(
      `${tenant} ${month}`,
    );
    expect(await archiveClosedMonths(platform.kernel, new Date('2026-04-09T00:00:00Z'))).toContain(
      `${tenant} ${month}`,
    );
    const [archive] = await archives();
    expect(archive).toMatchObject({ month, records: '40' });
    const lines: Body[] = [];
    for await (const row of readArchive(platform.kernel, archive!.object_key)) lines.push(row);
    expect(lines).toHaveLength(40);
    expect(lines[0]).toMatchObject({
      tenant_id: tenant,
      action: 'shop.order.placed',
      seq: expect.any(String),
      hash: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    expect(await archiveClosedMonths(platform.kernel, new Date('2026-04-10T00:00:00Z'))).not.toContain(
      `${tenant} ${month}`,
    ); // nothing new
  });

  it('restores a cold export from the archive when the hot rows are gone', async () => {
    const ch = await platform.kernel.analytics();
    await ch.command(
      `ALTER TABLE ${ch.database}.audit_records DELETE WHERE tenant_id = '${tenant}' SETTINGS mutations_sync = 2`,
    ); // as the TTL would
    const client = auditClient(platform.url, tenant, 'u-owner');
    const started = await client.call(
      'GET',
      '/audit/export?format=csv&since=2026-02-15T00:00:00Z&until=2026-03-11T00:00:00Z',
    );
    expect(started.status).toBe(202);
    await eventually(
      async () => (await client.call('GET', `/audit/export/jobs/${started.body.jobId}`)).body.status === 'completed',
      20_000,
    );
    const file = await client.call('GET', `/audit/export/jobs/${started.body.jobId}/file`);
    expect(file.headers.get('content-type')).toMatch(/^text\/csv/);
    expect(file.text.trim().split('\r\n')).toHaveLength(1 + 20); // header + the records of March 1-10
    expect(file.text).toContain('10.9.8.7');
  });

  it('is rewritten under an anonymization, which then completes', async () => {
    const client = auditClient(platform.url, tenant, 'u-owner');
    // the hot rows are gone, but the domain of records still names the user in the archive: recorded anew today
    await platform.kernel.audit.record(
      auditRecord(
        {
          action: 'shop.order.viewed',
          entityType: 'order',
          entityId: 'o-1',
          tenantId: tenant,
          actorId: 'u-old',
          timestamp: new Date().toISOString(),
        },
        platform.kernel.ids.next(),
      ),
    );
    await eventually(async () => (await client.call('GET', '/audit?actorId=u-old')).body.data.length >= 1);
    const res = await client.call('POST', '/audit/anonymize', { userId: 'u-old' });
    expect(res.status).toBe(202);
    await eventually(
      async () =>
        (
          await platform.kernel.db.query(
            `SELECT 1 FROM audit.anonymizations WHERE tenant_id = $1 AND status = 'completed'`,
            [tenant],
          )
        ).rowCount === 1,
      20_000,
    );
    const [archive] = await archives();
    const lines: Body[] = [];
    for await (const row of readArchive(platform.kernel, archive!.object_key)) lines.push(row);
    const old = lines.filter((l) => l.actor_id === 'u-old');
    expect(old).toHaveLength(20);
    expect(old.every((l) => l.actor_ip === '0.0.0.0' && l.actor_user_agent === null && l.redacted === true)).toBe(true);
    expect(
      lines.filter((l) => l.actor_id === 'u-other').every((l) => l.actor_ip === '10.9.8.7' && l.redacted === undefined),
    ).toBe(true);
  });

  it('archives a month after the anonymization under its overlay', async () => {
    const client = auditClient(platform.url, tenant, 'u-owner');
    for (const day of [3, 4]) {
      await platform.kernel.audit.record(
        auditRecord(
          {
            action: 'shop.order.placed',
            entityType: 'order',
            entityId: `april-${day}`,
            tenantId: tenant,
            actorId: 'u-old',
            actorIp: '10.9.8.7',
            actorUserAgent: 'old-browser/1',
            timestamp: `2026-04-0${day}T12:00:00.000Z`,
          },
          platform.kernel.ids.next(),
        ),
      );
    }
    await eventually(
      async () =>
        (await client.call('GET', '/audit?entityType=order&since=2026-04-01T00:00:00Z&until=2026-05-01T00:00:00Z')).body
          .data.length === 2,
    );
    expect(await archiveClosedMonths(platform.kernel, new Date('2026-05-10T00:00:00Z'))).toContain(`${tenant} 2026-04`);
    const april = (await archives()).find((a) => a.month === '2026-04')!;
    const lines: Body[] = [];
    for await (const row of readArchive(platform.kernel, april.object_key)) lines.push(row);
    expect(lines.map((l) => [l.actor_ip, l.actor_user_agent, l.redacted])).toEqual([
      ['0.0.0.0', null, true],
      ['0.0.0.0', null, true],
    ]);
  });

  it('deletes archives older than AUDIT_COLD_YEARS', async () => {
    const march = (await archives()).find((a) => a.month === month)!;
    expect(await purgeExpiredArchives(platform.kernel, new Date('2033-03-15T00:00:00Z'))).toBe(0);
    expect(await purgeExpiredArchives(platform.kernel, new Date('2033-04-15T00:00:00Z'))).toBe(1);
    expect((await archives()).map((a) => a.month)).toEqual(['2026-04']);
    expect(await platform.kernel.engines.objects.head(march.object_key)).toBeNull();
  });
});
