import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AUDIT_TOPIC } from '../../../infra/audit';
import type { ApiClient, Body, Receiver, RegisteredModule } from '../../support/events';
import { EVENTS_TEST_ENV, eventually, subscribedModule, startReceiver } from '../../support/events';
import type { TestPlatform } from '../../support/platform';
import { startTestPlatform } from '../../support/platform';

/**
 * replay-all at DLQ_REPLAY_RATE_LIMIT (spec 002, Limits: 50 events per second), measured at the
 * receiving end: redeliveries spread over at least (n - 1) / 50 seconds and no second holds more
 * than 50 of them. Resolved dead letters are skipped and counted.
 */
describe.each([
  { name: 'the embedded log', kafka: false },
  { name: 'Kafka', kafka: true },
])('POST /events/dlq/replay-all on $name', ({ kafka }) => {
  let platform: TestPlatform;
  let receiver: Receiver;
  let crm: RegisteredModule;
  let client: ApiClient;
  const tenantId = randomUUID();

  beforeAll(async () => {
    platform = await startTestPlatform({ role: 'all', services: ['events'], kafka, env: EVENTS_TEST_ENV });
    receiver = await startReceiver();
    ({ module: crm, client: client } = await subscribedModule(platform, {
      prefix: 'rate',
      event: 'job.failed',
      handler: 'jobs',
      receiver,
      tenantId,
    }));
  });
  afterAll(async () => {
    await platform?.close();
    await receiver?.close();
  });

  const auditActions = async (): Promise<{ action: string; entityId: string }[]> => {
    const log = platform.kernel.log;
    const found: { action: string; entityId: string }[] = [];
    for (let p = 0; p < (await log.partitionsOf(AUDIT_TOPIC)); p += 1) {
      for (let offset = 0; ;) {
        const records = await log.read(AUDIT_TOPIC, p, offset, 1000);
        if (records.length === 0) break;
        for (const r of records) {
          const v = JSON.parse(r.value) as { payload?: { action?: string; entityId?: string } };
          if (v.payload?.action && v.payload.entityId)
            found.push({ action: v.payload.action, entityId: v.payload.entityId });
        }
        offset = records[records.length - 1]!.offset + 1;
      }
    }
    return found;
  };

  it('redelivers pending dead letters at no more than 50 a second and skips the resolved ones', async () => {
    const count = 80;
    const topic = `platform.${crm.slug}.events`;
    const batch = await client.call('POST', '/events/publish/batch', {
      topic,
      events: Array.from({ length: count }, (_, i) => ({
        type: `${crm.slug}.job.failed`,
        payload: { fail: true, i },
        entityId: `job-${i}`,
      })),
    });
    expect(batch.status).toBe(202);
    const entries = await eventually(
      async () => {
        const res = await client.call('GET', '/events/dlq?status=pending&page_size=100');
        return res.body.data.length === count ? (res.body.data as Body[]) : null;
      },
      60_000,
      200,
    );
    for (const e of entries.slice(0, 5)) expect((await client.call('DELETE', `/events/dlq/${e.id}`)).status).toBe(200);

    receiver.failMarked = false;
    const replay = await client.call('POST', '/events/dlq/replay-all', {});
    expect(replay.status).toBe(202);
    expect(replay.body).toEqual({ replayed: count - 5, skipped_already_resolved: 5 });

    const arrivals = await eventually(
      async () => {
        const got = receiver.received.filter((d: Body) => d.event.payload.fail === true);
        return got.length >= count - 5 ? got : null;
      },
      30_000,
      100,
    );
    // deliberately let time pass: no redelivery may come twice (an absence)
    await new Promise((r) => setTimeout(r, 300));
    expect(receiver.received.filter((d: Body) => d.event.payload.fail === true)).toHaveLength(count - 5);
    const times = arrivals.map((d: Body) => d.at as number).sort((a, b) => a - b);
    // 75 redeliveries at 50/s: the last is at least 74/50 s after the first (less a margin for timer jitter)
    expect(times[times.length - 1]! - times[0]!).toBeGreaterThanOrEqual(((count - 6) / 50) * 1000 * 0.9);
    const busiestSecond = Math.max(...times.map((t) => times.filter((u) => u >= t && u < t + 1000).length));
    expect(busiestSecond).toBeLessThanOrEqual(51);
    const resolved = await client.call('GET', '/events/dlq?status=resolved&page_size=100');
    expect(resolved.body.data).toHaveLength(count);

    // every redrive and resolution is audited, one record per dead letter (committed with it, relayed from the outbox)
    const ids = new Set(entries.map((e) => e.id as string));
    const audited = await eventually(
      async () => {
        const found = (await auditActions()).filter((a) => ids.has(a.entityId));
        return found.length >= count ? found : null;
      },
      30_000,
      100,
    );
    expect(audited.filter((a) => a.action === 'events.dlq.resolved')).toHaveLength(5);
    expect(audited.filter((a) => a.action === 'events.dlq.replayed')).toHaveLength(count - 5);
  });
});
