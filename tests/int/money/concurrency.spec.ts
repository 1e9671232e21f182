import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestPlatform } from '../../support/platform';
import { startTestPlatform } from '../../support/platform';
import { moneyClient, moneyServices } from '../../support/money';
import { checkMoneyInvariants, recordedTransfers } from '../../support/money-checks';

const SECONDS = Number(process.env.MONEY_STRESS_SECONDS ?? 30);
const WORKERS = 16;
const WALLETS = 20;

describe(`${WORKERS} workers transferring among ${WALLETS} wallets for ${SECONDS} s through HTTP`, () => {
  let platform: TestPlatform;
  beforeAll(async () => {
    platform = await startTestPlatform({
      services: moneyServices,
      env: { RATE_LIMIT_USER_PER_MIN: '1000000', RATE_LIMIT_TENANT_PER_MIN: '1000000' },
    });
  });
  afterAll(async () => {
    await platform?.close();
  });

  it('keeps the total, never goes negative, and maps every 2xx to exactly one transaction', async () => {
    const c = moneyClient(platform.url, 'stress', 'u-admin', { members: platform.kernel.db });
    const wallets: string[] = [];
    for (let i = 0; i < WALLETS; i += 1) {
      const id = await c.openWallet(`user-${i}`);
      expect((await c.post(`/wallets/${id}/credit`, { amount: 10_000, currency: 'USD' })).status).toBe(200);
      wallets.push(id);
    }
    const total = WALLETS * 10_000;
    const answered = new Map<string, string>();
    const statuses = new Map<number, number>();
    let negativeSeen = false;
    const deadline = Date.now() + SECONDS * 1000;
    const worker = async () => {
      while (Date.now() < deadline) {
        const from = wallets[Math.floor(Math.random() * WALLETS)]!;
        let to = wallets[Math.floor(Math.random() * WALLETS)]!;
        if (to === from) to = wallets[(wallets.indexOf(from) + 1) % WALLETS]!;
        const key = randomUUID();
        const res = await c.post(
          '/transfers',
          { fromWalletId: from, toWalletId: to, amount: 1 + Math.floor(Math.random() * 3000), currency: 'USD' },
          key,
        );
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        if (res.status === 200) {
          expect(answered.has(res.body.id)).toBe(false);
          answered.set(res.body.id, key);
          if (res.body.balanceAfter.available < 0) negativeSeen = true;
        } else {
          expect(res.body.type).toMatch(/\/insufficient-funds$/);
        }
      }
    };
    const watcher = async () => {
      while (Date.now() < deadline) {
        const { rows } = await platform.kernel.db.query<{ n: string; s: string }>(
          "SELECT count(*) FILTER (WHERE available < 0) AS n, sum(available + frozen)::text AS s FROM rm.money_wallets WHERE tenant_id = 'stress'",
        );
        if (Number(rows[0]!.n) > 0) negativeSeen = true;
        expect(rows[0]!.s).toBe(String(total));
        // the watcher's sampling interval while the workers run (it samples, it does not wait for anything)
        await new Promise((r) => setTimeout(r, 250));
      }
    };
    await Promise.all([...Array.from({ length: WORKERS }, worker), watcher()]);
    console.warn(
      'stress statuses',
      Object.fromEntries(statuses),
      'transfers/s',
      Math.round((statuses.get(200) ?? 0) / SECONDS),
    );
    expect(negativeSeen).toBe(false);
    expect(answered.size).toBeGreaterThan(SECONDS * 10);
    const recorded = await recordedTransfers(platform.kernel.db, 'stress');
    expect(recorded.size).toBe(answered.size);
    for (const id of answered.keys()) expect(recorded.get(id)).toBe(1);
    const { rows } = await platform.kernel.db.query<{ s: string }>(
      "SELECT sum(available)::text AS s FROM rm.money_wallets WHERE tenant_id = 'stress'",
    );
    expect(rows[0]!.s).toBe(String(total));
    await checkMoneyInvariants(platform.kernel.db);
  }, 120_000);
});
