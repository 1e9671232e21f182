import { v7 as uuidv7 } from 'uuid';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mergeServiceParts } from '../../../infra/services';
import type { AnalyticsProjection } from '../../../infra/projections/projection';
import { testToken } from '../../support/auth';
import type { TestPlatform } from '../../support/platform';
import { startTestPlatform, tallyServices } from '../../support/platform';
import { pollUntil } from '../../support/poll';

/**
 * The kernel's ClickHouse projections (infra/projections/analytics.ts) on a small example: each
 * increment of a tally counter becomes a row carrying the tenant's running count (carried state).
 */
type Row = { tenant_id: string; event_id: string; counter_id: string; by: number; running: number };

const increments: AnalyticsProjection<'tally_increments', { n: number }> = {
  name: 'test.increments',
  version: 1,
  mode: 'async',
  target: 'clickhouse',
  handles: ['tally.counter.incremented'],
  tables: {
    tally_increments: (t) => [
      `CREATE TABLE ${t} (tenant_id String, event_id String, counter_id String, by Int64, running UInt64)
      ENGINE = ReplacingMergeTree ORDER BY (tenant_id, event_id)`,
    ],
  },
  stateKey: (e) => e.tenantId,
  rows(events, state) {
    const next = new Map(state);
    const rows = events.map((e) => {
      const n = (next.get(e.tenantId)?.n ?? 0) + 1;
      next.set(e.tenantId, { n });
      return {
        tenant_id: e.tenantId,
        event_id: e.eventId,
        counter_id: String(e.data.counterId),
        by: Number(e.data.by),
        running: n,
      };
    });
    return { rows: { tally_increments: rows }, state: next };
  },
};

let platform: TestPlatform;
const tenant = `tenant-${uuidv7()}`;
const headers = { authorization: `Bearer ${testToken(tenant, 'u1', ['tally.*'])}`, 'content-type': 'application/json' };

beforeAll(async () => {
  platform = await startTestPlatform({ services: mergeServiceParts(tallyServices, { projections: [increments] }) });
  expect(
    (
      await platform.http('/v1/tally/counters', {
        method: 'POST',
        headers,
        body: JSON.stringify({ id: 'c1', name: 'one' }),
      })
    ).status,
  ).toBe(201);
  for (let i = 1; i <= 5; i += 1) {
    const res = await platform.http('/v1/tally/counters/c1/increment', {
      method: 'POST',
      headers: { ...headers, 'idempotency-key': uuidv7() },
      body: JSON.stringify({ by: i }),
    });
    expect(res.status).toBe(200);
  }
});
afterAll(async () => platform?.close());

const rows = async (): Promise<Row[]> => {
  const ch = await platform.kernel.analytics();
  return (
    await ch.query<Row>(
      `SELECT tenant_id, event_id, counter_id, by, running FROM ${ch.database}.tally_increments WHERE tenant_id = {t:String} ORDER BY running LIMIT 1 BY event_id`,
      { t: tenant },
    )
  ).map((r) => ({ ...r, by: Number(r.by), running: Number(r.running) }));
};
const physicalRows = async (): Promise<number> => {
  const ch = await platform.kernel.analytics();
  const [row] = await ch.query<{ n: string }>(
    `SELECT count() AS n FROM ${ch.database}.tally_increments WHERE tenant_id = {t:String}`,
    { t: tenant },
  );
  return Number(row!.n);
};
const activeGeneration = async (): Promise<number> =>
  (
    await platform.kernel.db.query<{ g: number }>(
      `SELECT active_generation AS g FROM es.projections WHERE name = 'test.increments'`,
    )
  ).rows[0]!.g;
const settled = (n: number) =>
  pollUntil(rows, (got) => got.length >= n, { timeoutMs: 15_000, what: `${n} projected rows` });

describe('a ClickHouse projection', () => {
  it('is kept up by the projector, rows following the carried state in log order', async () => {
    const got = await settled(5);
    expect(got.map((r) => [r.by, r.running])).toEqual([
      [1, 1],
      [2, 2],
      [3, 3],
      [4, 4],
      [5, 5],
    ]);
    const [status] = (await platform.kernel.projections.status()).filter((s) => s.name === 'test.increments');
    expect(status).toMatchObject({ mode: 'async', version: 1, lag: 0 });
  });

  it('writes the very same rows again when a batch is replayed after a crash before its checkpoint', async () => {
    const before = await rows();
    const db = platform.kernel.db;
    const ch = await platform.kernel.analytics();
    const g = await activeGeneration();
    await ch.command(`SYSTEM STOP MERGES ${ch.database}.tally_increments_g${g}`); // keep the duplicates visible
    // the process died after inserting the rows and before committing checkpoint and state
    await db.query(`UPDATE es.checkpoints SET transaction_id = '0', position = 0 WHERE name = $1`, [
      `projection:test.increments:g${g}`,
    ]);
    await db.query(`DELETE FROM es.projection_state WHERE projection = 'test.increments'`);
    await pollUntil(physicalRows, (n) => n >= 10, { timeoutMs: 15_000, what: 'the replayed batch inserted' });
    expect(await physicalRows()).toBe(10); // inserted twice...
    expect(await rows()).toEqual(before); // ...read once, identical
  });

  it('is rebuilt into a new generation behind its view, with the same rows, the old generation dropped', async () => {
    const before = await rows();
    const g = await activeGeneration();
    const progress: number[] = [];
    await platform.kernel.projections.rebuild('test.increments', (p) => progress.push(p.applied));
    const [status] = (await platform.kernel.projections.status()).filter((s) => s.name === 'test.increments');
    expect(status).toMatchObject({ activeGeneration: g + 1, building: null });
    expect(await rows()).toEqual(before);
    expect(progress.length).toBeGreaterThan(0);
    const ch = await platform.kernel.analytics();
    const tables = (
      await ch.query<{ name: string }>(
        `SELECT name FROM system.tables WHERE database = {db:String} AND name LIKE 'tally_increments%' ORDER BY name`,
        { db: ch.database },
      )
    ).map((t) => t.name);
    expect(tables).toEqual(['tally_increments', `tally_increments_g${g + 1}`]);
  });

  it('refuses a tenant rebuild, pointing to the whole rebuild', async () => {
    await expect(platform.kernel.projections.rebuildTenant('test.increments', tenant)).rejects.toThrow(
      /rebuild it whole/,
    );
  });
});
