import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventStore } from '../../../infra/eventstore/event-store';
import { CommandRunner } from '../../../infra/eventstore/command-runner';
import { ProjectionEngine } from '../../../infra/projections/engine';
import { systemClock, uuidV7Ids } from '../../../infra/runtime/clock';
import type { TestDatabase } from '../../support/db';
import { createTestDatabase, waitForVisibleLog } from '../../support/db';
import { handleTally } from '../../support/tally/commands';
import { counters, totals } from '../../support/tally/projections';

let t: TestDatabase;
let engine: ProjectionEngine;
let runner: CommandRunner;
const meta = (tenantId: string) => ({ tenantId, actorId: 'u', traceId: null, correlationId: null, causationId: null });

/** a checksum of a relation's rows, independent of physical order */
const checksum = async (relation: string) =>
  (await t.db.query<{ sum: string }>(`SELECT md5(string_agg(r::text, '|' ORDER BY r::text)) AS sum FROM ${relation} r`))
    .rows[0]!.sum;

const catchUp = async () => {
  await waitForVisibleLog(t.db);
  while ((await engine.runBatch('tally.totals')) > 0) {
    /* until caught up */
  }
};

beforeAll(async () => {
  t = await createTestDatabase('proj');
  const store = new EventStore(systemClock, uuidV7Ids);
  engine = new ProjectionEngine(t.db, store, [counters, totals]);
  await engine.prepare();
  runner = new CommandRunner(t.db, store, engine);
  for (const tenant of ['tenant-a', 'tenant-b']) {
    for (let c = 0; c < 20; c += 1) {
      await runner.run(meta(tenant), (uow) =>
        handleTally(uow, { type: 'CreateCounter', counterId: `c${c}`, name: `counter ${c}` }),
      );
      for (let i = 1; i <= 5; i += 1)
        await runner.run(meta(tenant), (uow) => handleTally(uow, { type: 'Increment', counterId: `c${c}`, by: i }));
    }
  }
  await catchUp();
});
afterAll(async () => t.drop());

describe('an inline projection', () => {
  it('is readable in the same transaction as the write (read-your-writes)', async () => {
    const result = await runner.run(meta('tenant-a'), async (uow) => {
      const out = await handleTally(uow, { type: 'Increment', counterId: 'c0', by: 100 });
      await uow.flush(engine);
      const row = (
        await uow.tx.query('SELECT value FROM rm.tally_counters WHERE tenant_id = $1 AND id = $2', ['tenant-a', 'c0'])
      ).rows[0];
      return { out, row };
    });
    expect(Number(result.row.value)).toBe(result.out!.value);
  });
});

describe('an async projection caught up with the log', () => {
  it('has its checkpoint at the head and sums every increment once', async () => {
    await catchUp();
    const [status] = (await engine.status()).filter((s) => s.name === 'tally.totals');
    expect(status!.lag).toBe(0);
    const { rows } = await t.db.query('SELECT tenant_id, increments, sum FROM rm.tally_totals ORDER BY tenant_id');
    expect(rows.map((r) => [r.tenant_id, Number(r.increments)])).toEqual([
      ['tenant-a', 101],
      ['tenant-b', 100],
    ]);
  });

  it('yields the same rows when the log is replayed twice as when applied once', async () => {
    const before = await checksum('rm.tally_totals');
    const events = await new EventStore(systemClock, uuidV7Ids).readAll(
      t.db,
      { transactionId: 0n, position: 0n },
      100_000,
    );
    for (let pass = 0; pass < 2; pass += 1) {
      for (const e of events) {
        if (!totals.handles.includes(e.type)) continue;
        for (const s of totals.evolve(e, { tally_totals: 'rm.tally_totals', tally_applied: 'rm.tally_applied' }))
          await t.db.query(s.text, s.values);
      }
    }
    expect(await checksum('rm.tally_totals')).toBe(before);
  });
});

describe('a rebuild', () => {
  it('yields tables identical (by checksum) to the live ones, and switches readers at once', async () => {
    for (const name of ['tally.counters', 'tally.totals']) {
      const p = name === 'tally.counters' ? 'rm.tally_counters' : 'rm.tally_totals';
      const before = await checksum(p);
      const generationBefore = (await engine.status()).find((s) => s.name === name)!.activeGeneration;
      const progress: number[] = [];
      await engine.rebuild(name, (x) => progress.push(x.applied));
      const after = (await engine.status()).find((s) => s.name === name)!;
      expect(after.activeGeneration).toBe(generationBefore + 1);
      expect(await checksum(p)).toBe(before);
      expect(progress.length).toBeGreaterThan(0);
    }
  });

  it('keeps serving the old generation to readers while it runs, with writes continuing', async () => {
    const reads: number[] = [];
    let rebuilding = true;
    const reader = (async () => {
      while (rebuilding) {
        const { rows } = await t.db.query('SELECT count(*) AS n FROM rm.tally_counters');
        reads.push(Number(rows[0].n));
      }
    })();
    const writer = (async () => {
      for (let i = 0; i < 30; i += 1)
        await runner.run(meta('tenant-b'), (uow) => handleTally(uow, { type: 'Increment', counterId: 'c1', by: 1 }));
    })();
    await engine.rebuild('tally.counters');
    await writer;
    rebuilding = false;
    await reader;
    // never an empty or partial table
    expect(reads.length).toBeGreaterThan(0);
    expect(Math.min(...reads)).toBe(40);
    const { rows } = await t.db.query(`SELECT value FROM rm.tally_counters WHERE tenant_id = 'tenant-b' AND id = 'c1'`);
    expect(Number(rows[0].value)).toBe(15 + 30);
  });

  it("of one tenant rewrites only that tenant's rows, to the same content", async () => {
    const all = await checksum('rm.tally_counters');
    await t.db.query(`UPDATE rm.tally_counters SET value = -1 WHERE tenant_id = 'tenant-a'`);
    await t.db.query(`UPDATE rm.tally_counters SET name = 'untouched' WHERE tenant_id = 'tenant-b' AND id = 'c2'`);
    const applied = await engine.rebuildTenant('tally.counters', 'tenant-a');
    expect(applied).toBe(20 * 6 + 1);
    const { rows } = await t.db.query(
      `SELECT count(*) AS n FROM rm.tally_counters WHERE tenant_id = 'tenant-a' AND value < 0`,
    );
    expect(Number(rows[0].n)).toBe(0);
    expect(
      (await t.db.query(`SELECT name FROM rm.tally_counters WHERE tenant_id = 'tenant-b' AND id = 'c2'`)).rows[0].name,
    ).toBe('untouched');
    await t.db.query(`UPDATE rm.tally_counters SET name = 'counter 2' WHERE tenant_id = 'tenant-b' AND id = 'c2'`);
    expect(await checksum('rm.tally_counters')).toBe(all);
  });
});
