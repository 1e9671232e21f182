import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { replay } from '../../../app/cli/replay';
import { loadConfig } from '../../../infra/config';
import type { Kernel } from '../../../infra/kernel';
import { silentLogger } from '../../../infra/observability/logger';
import { openKernel } from '../../../app/platform';
import { OutboxRelay } from '../../../workers/outbox-relay';
import type { TestDatabase } from '../../support/db';
import { createTestDatabase, waitForVisibleLog } from '../../support/db';
import { tallyServices } from '../../support/platform';
import { handleTally } from '../../support/tally/commands';
import { pollUntil } from '../../support/poll';

const TOPIC = 'platform.tally.events';
let t: TestDatabase;
let kernel: Kernel;
const meta = { tenantId: 'tenant-r', actorId: 'u', traceId: null, correlationId: null, causationId: null };
const totals = async () =>
  (await kernel.db.query(`SELECT tenant_id, increments, sum FROM rm.tally_totals ORDER BY tenant_id`)).rows;

beforeAll(async () => {
  t = await createTestDatabase('replay');
  kernel = await openKernel({
    config: loadConfig({ DATABASE_URL: t.url, PLATFORM_ENV: 'test', LOG_LEVEL: 'silent' }),
    logger: silentLogger(),
    services: tallyServices,
  });
  await kernel.projections.prepare();
  await kernel.commands.run(meta, (uow) => handleTally(uow, { type: 'CreateCounter', counterId: 'c', name: 'c' }));
  for (let i = 1; i <= 30; i += 1)
    await kernel.commands.run(meta, (uow) => handleTally(uow, { type: 'Increment', counterId: 'c', by: i }));
  await waitForVisibleLog(kernel.db);
  const relay = new OutboxRelay(kernel.db, kernel.store, kernel.log, silentLogger());
  while ((await relay.runOnce()) > 0) {
    /* publish everything */
  }
  while ((await kernel.projections.runBatch('tally.totals')) > 0) {
    /* catch up */
  }
});
afterAll(async () => {
  await kernel.close();
  await t.drop();
});

describe('replay of a topic into a projection', () => {
  it('changes nothing when the projection is up to date (projections are idempotent)', async () => {
    const before = await totals();
    expect(before).toEqual([{ tenant_id: 'tenant-r', increments: '30', sum: '465' }]);
    const applied = await replay(kernel, { topic: TOPIC, from: { offset: 0 }, into: 'tally.totals' });
    expect(applied).toBe(30);
    expect(await totals()).toEqual(before);
  });

  it('restores rows lost from the read model, from an offset or a time, up to a bound', async () => {
    await kernel.db.query('DELETE FROM rm.tally_applied');
    await kernel.db.query('DELETE FROM rm.tally_totals');
    await replay(kernel, { topic: TOPIC, from: { time: 0 }, to: { time: Date.now() + 60_000 }, into: 'tally.totals' });
    expect(await totals()).toEqual([{ tenant_id: 'tenant-r', increments: '30', sum: '465' }]);
  });
});

describe('replay of a topic into a consumer group', () => {
  it('rewinds the group so its consumer re-reads from the offset', async () => {
    const group = 'replay-test-group';
    const seen: number[] = [];
    const sub = await kernel.log.subscribe({
      groupId: group,
      topics: [TOPIC],
      eachBatch: async (records) => {
        seen.push(...records.map((r) => r.offset));
      },
    });
    await pollUntil(
      async () => seen.length,
      (n) => n >= 31,
      { timeoutMs: 10_000, what: 'the 31 records consumed' },
    ).finally(() => sub.stop());
    expect(seen).toHaveLength(31);
    expect((await kernel.log.positions(group, TOPIC)).reduce((n, p) => n + p.lag, 0)).toBe(0);
    const redelivered = await replay(kernel, { topic: TOPIC, from: { offset: 0 }, into: group });
    expect(redelivered).toBe(31);
    expect((await kernel.log.positions(group, TOPIC)).reduce((n, p) => n + p.lag, 0)).toBe(31);
  });

  it('refuses --to for a consumer group', async () => {
    await expect(
      replay(kernel, { topic: TOPIC, from: { offset: 0 }, to: { offset: 5 }, into: 'some-group' }),
    ).rejects.toThrow(/--to applies to replays into a projection/);
  });
});
