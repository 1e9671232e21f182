import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestDatabase } from '../../support/db';
import { createTestDatabase } from '../../support/db';
import { moneyClient } from '../../support/money';
import { checkMoneyInvariants, recordedTransfers } from '../../support/money-checks';
import type { ServiceProcess } from '../../support/service-process';
import { startServiceProcess } from '../../support/service-process';

describe('the server killed (SIGKILL) during a transfer storm', () => {
  let database: TestDatabase;
  let server: ServiceProcess | null = null;
  beforeAll(async () => {
    database = await createTestDatabase('crash');
  });
  afterAll(async () => {
    server?.child.kill('SIGKILL');
    await database?.drop();
  });

  it('restarts with every invariant holding, every 2xx transfer present once and nothing half-applied', async () => {
    server = await startServiceProcess('money', { DATABASE_URL: database.url, MONEY_HOLD_CLEANUP_INTERVAL_SEC: '60' });
    let c = moneyClient(server.url, 'crash', 'u-admin', { members: database.db });
    const wallets: string[] = [];
    for (let i = 0; i < 10; i += 1) {
      const id = await c.openWallet(`u${i}`);
      await c.post(`/wallets/${id}/credit`, { amount: 50_000, currency: 'USD' });
      wallets.push(id);
    }
    const answered = new Map<string, string>();
    const unknown: { key: string; body: unknown }[] = [];
    let killed = false;
    const worker = async () => {
      while (!killed) {
        const from = wallets[Math.floor(Math.random() * 10)]!;
        const to = wallets[(wallets.indexOf(from) + 1 + Math.floor(Math.random() * 9)) % 10]!;
        const key = randomUUID();
        const body = {
          fromWalletId: from,
          toWalletId: to,
          amount: 1 + Math.floor(Math.random() * 500),
          currency: 'USD',
        };
        try {
          const res = await c.post('/transfers', body, key);
          if (res.status === 200) answered.set(res.body.id, key);
        } catch {
          unknown.push({ key, body }); // in flight when the process died: outcome unknown until retried
        }
      }
    };
    const storm = Promise.all(Array.from({ length: 8 }, worker));
    // deliberately let the storm run for a while: the kill must land mid-flight
    await new Promise((r) => setTimeout(r, 3000));
    server.child.kill('SIGKILL');
    killed = true;
    await storm;
    expect(answered.size).toBeGreaterThan(10);

    server = await startServiceProcess('money', { DATABASE_URL: database.url, MONEY_HOLD_CLEANUP_INTERVAL_SEC: '60' });
    c = moneyClient(server.url, 'crash', 'u-admin', { members: database.db });
    await checkMoneyInvariants(database.db);
    const recorded = await recordedTransfers(database.db, 'crash');
    for (const id of answered.keys()) expect(recorded.get(id)).toBe(1);
    const { rows } = await database.db.query<{ s: string }>(
      "SELECT sum(available)::text AS s FROM rm.money_wallets WHERE tenant_id = 'crash'",
    );
    expect(rows[0]!.s).toBe(String(10 * 50_000));

    // the clients retry what was in flight with the same keys: each executes at most once
    for (const { key, body } of unknown) {
      const first = await c.post('/transfers', body, key);
      const again = await c.post('/transfers', body, key);
      expect([200, 400]).toContain(first.status);
      expect(again.text).toBe(first.text);
    }
    const after = await recordedTransfers(database.db, 'crash');
    for (const n of after.values()) expect(n).toBe(1);
    await checkMoneyInvariants(database.db);
    console.warn('crash: answered', answered.size, 'in flight', unknown.length, 'recorded after retries', after.size);
  }, 180_000);
});
