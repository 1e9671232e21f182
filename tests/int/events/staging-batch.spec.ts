import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Staging } from '../../../commands/events/stage-batch';
import { StagingBatcher } from '../../../commands/events/stage-batch';
import type { Kernel } from '../../../infra/kernel';
import { createPool } from '../../../infra/postgres/db';
import type { TestPlatform } from '../../support/platform';
import { startTestPlatform } from '../../support/platform';

/**
 * The bus's publishes staged together (commands/events/stage-batch.ts): one tenant's publishes
 * count on one row of events.daily_usage, decided in arrival order on the counts the ones before
 * left, each whole or refused whole, staged in arrival order — as if each had run alone.
 */
let p: TestPlatform;

beforeAll(async () => {
  // the write API alone: no relay takes the staged rows away before they are read here
  p = await startTestPlatform({ role: 'write-api', services: ['events'] });
});
afterAll(async () => {
  await p?.close();
});

const DAY = '2026-11-27';

const staging = (tenantId: string, limit: number, topic: string, label: string, events: number): Staging => ({
  tenantId,
  day: DAY,
  limit,
  topic,
  events: Array.from({ length: events }, (_, i) => ({
    key: `${label}-${i}`,
    value: JSON.stringify({ label, i }),
    headers: '{}',
  })),
  at: new Date(`${DAY}T12:00:00Z`),
});

const settle = (submitted: Promise<unknown>[]) =>
  Promise.allSettled(submitted).then((all) =>
    all.map((r) =>
      r.status === 'fulfilled'
        ? r.value
        : { refused: (r.reason as { status: number; extensions?: Record<string, unknown> }).extensions },
    ),
  );

describe('publishes staged together', () => {
  it('given one tenant at 5 a day, when six publishes arrive together, then each is decided in arrival order on what the earlier ones left', async () => {
    // one batch in flight at a time: the first publish runs in a batch of its own, the others wait and share the next
    const batcher = new StagingBatcher(p.kernel, { maxSize: 64, concurrency: 1 });
    const [tenant, unlimited] = [randomUUID(), randomUUID()];
    const topic = `platform.staging${randomUUID().slice(0, 8)}.events`;
    const sizes: [string, number][] = [
      ['a', 2],
      ['b', 1],
      ['c', 3],
      ['d', 1],
      ['e', 1],
      ['f', 2],
    ];
    const results = await settle([
      ...sizes.map(([label, n]) => batcher.submit(staging(tenant, 5, topic, label, n))),
      batcher.submit(staging(unlimited, 0, topic, 'u', 2)),
    ]);

    expect(results).toEqual([
      { published: 2 },
      { published: 3 },
      { refused: { code: 'LIMIT_EXCEEDED', resource: 'events_per_day', currentUsage: 3, limit: 5 } },
      { published: 4 },
      { published: 5 },
      { refused: { code: 'LIMIT_EXCEEDED', resource: 'events_per_day', currentUsage: 5, limit: 5 } },
      { published: 2 },
    ]);
    const counted = await p.kernel.db.query<{ tenant_id: string; published: string }>(
      'SELECT tenant_id, published::text FROM events.daily_usage WHERE tenant_id = ANY($1) AND day = $2',
      [[tenant, unlimited], DAY],
    );
    expect(Object.fromEntries(counted.rows.map((r) => [r.tenant_id, Number(r.published)]))).toEqual({
      [tenant]: 5,
      [unlimited]: 2,
    });
    // staged in arrival order (the relay's order), the refused ones not at all
    const staged = await p.kernel.db.query<{ key: string }>(
      'SELECT key FROM events.outbox WHERE topic = $1 ORDER BY transaction_id, position',
      [topic],
    );
    expect(staged.rows.map((r) => r.key)).toEqual(['a-0', 'a-1', 'b-0', 'd-0', 'e-0', 'u-0', 'u-1']);
  });

  it('given a server whose DateStyle is not ISO, when publishes arrive together, then they still share a batch (none falls back to running alone)', async () => {
    await p.kernel.db.query(`ALTER DATABASE ${p.database.name} SET DateStyle = 'SQL, DMY'`);
    const db = createPool(p.database.url, { max: 4 }); // new sessions take the database's setting
    const warnings: unknown[] = [];
    try {
      // this kernel with the new pool and a logger that keeps the warnings (a batch that failed says so there)
      const logger = Object.assign(Object.create(p.kernel.logger) as Kernel['logger'], {
        warn: (...a: unknown[]) => warnings.push(a),
      });
      const kernel = Object.assign(Object.create(p.kernel) as Kernel, { db, logger });
      const batcher = new StagingBatcher(kernel, { maxSize: 64, concurrency: 1 });
      const tenant = randomUUID();
      const topic = `platform.styles${randomUUID().slice(0, 8)}.events`;
      const results = await settle(['a', 'b', 'c'].map((label) => batcher.submit(staging(tenant, 5, topic, label, 1))));
      expect(results).toEqual([{ published: 1 }, { published: 2 }, { published: 3 }]);
      expect(warnings).toEqual([]);
    } finally {
      await db.end();
      await p.kernel.db.query(`ALTER DATABASE ${p.database.name} RESET DateStyle`);
    }
  });
});
