import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestPlatform } from '../../support/platform';
import { startTestPlatform } from '../../support/platform';
import type { Body } from '../../support/money';
import { moneyClient } from '../../support/money';
import { checkMoneyInvariants } from '../../support/money-checks';

/*
 * Every kind of movement at once on a few wallets: credits, debits, holds, transfers (group
 * commit) interleaved with confirms, cancels and reversals (the ordinary path), which lock the
 * same wallets from outside the batches. Small batches in flight at once (two) and few wallets,
 * so that batches, the ordinary path and each other's row locks really meet.
 */
const SECONDS = Number(process.env.MONEY_MIXED_SECONDS ?? 10);
const WORKERS = 12;
const WALLETS = 6;

/** the refusals a random mix may meet; anything else (a 500, a 409) fails the test */
const EXPECTED_REFUSALS =
  /\/(insufficient-funds|hold-already-resolved|double-reversal|hold-not-reversible|transaction-not-reversible|hold-limit-exceeded|not-found)$/;

describe(`${WORKERS} workers mixing every movement on ${WALLETS} wallets for ${SECONDS} s through HTTP`, () => {
  let platform: TestPlatform;
  beforeAll(async () => {
    platform = await startTestPlatform({
      services: ['money'],
      env: {
        RATE_LIMIT_USER_PER_MIN: '1000000',
        RATE_LIMIT_TENANT_PER_MIN: '1000000',
        COMMAND_BATCH_CONCURRENCY: '2',
        COMMAND_BATCH_MAX_SIZE: '8',
      },
    });
  });
  afterAll(async () => {
    await platform?.close();
  });

  it('keeps every invariant: ledger balanced, balances equal their streams and entries, every 2xx recorded once', async () => {
    const c = moneyClient(platform.url, 'mixed', 'u-admin', { members: platform.kernel.db });
    const wallets: string[] = [];
    for (let i = 0; i < WALLETS; i += 1) {
      const id = await c.openWallet(`user-${i}`);
      expect((await c.post(`/wallets/${id}/credit`, { amount: 50_000, currency: 'USD' })).status).toBe(200);
      wallets.push(id);
    }
    const pick = <T>(xs: T[]): T => xs[Math.floor(Math.random() * xs.length)]!;
    const amount = () => 1 + Math.floor(Math.random() * 2000);
    const holds: string[] = [];
    const completed: string[] = [];
    const answered = new Map<string, string>();
    const statuses: Record<string, number> = {};
    const unexpected: string[] = [];

    const operations: (() => Promise<{ status: number; body: Body }>)[] = [
      () => c.post(`/wallets/${pick(wallets)}/credit`, { amount: amount(), currency: 'USD' }),
      () => c.post(`/wallets/${pick(wallets)}/debit`, { amount: amount(), currency: 'USD' }),
      () => c.post(`/wallets/${pick(wallets)}/hold`, { amount: amount(), currency: 'USD', ttl: '1h' }),
      () => {
        const [from, to] = [pick(wallets), pick(wallets)];
        return c.post('/transfers', {
          fromWalletId: from,
          toWalletId: from === to ? wallets[(wallets.indexOf(from) + 1) % WALLETS] : to,
          amount: amount(),
          currency: 'USD',
        });
      },
      () =>
        holds.length
          ? c.post(`/holds/${pick(holds)}/${Math.random() < 0.5 ? 'confirm' : 'cancel'}`, {})
          : c.get(`/wallets/${pick(wallets)}/balance`),
      () =>
        completed.length
          ? c.post(`/transactions/${pick(completed)}/reversal`, {})
          : c.get(`/wallets/${pick(wallets)}/balance`),
    ];

    const deadline = Date.now() + SECONDS * 1000;
    const worker = async () => {
      while (Date.now() < deadline) {
        const res = await pick(operations)();
        const type = res.body?.type as string | undefined;
        statuses[res.status] = (statuses[res.status] ?? 0) + 1;
        if (res.status === 200 && res.body?.transactionId) {
          const id = res.body.transactionId as string;
          // a 2xx is one movement: the same id never answers two different requests
          expect(answered.has(id), `transaction ${id} answered twice`).toBe(false);
          answered.set(id, res.body.type as string);
          if (res.body.type === 'hold') holds.push(id);
          if (['credit', 'debit', 'transfer'].includes(res.body.type as string) || res.body.type === 'confirm')
            completed.push(id);
        } else if (res.status >= 400 && !EXPECTED_REFUSALS.test(type ?? '')) {
          unexpected.push(`${res.status} ${type ?? JSON.stringify(res.body)}`);
        }
      }
    };
    await Promise.all(Array.from({ length: WORKERS }, worker));
    console.warn('mixed statuses', statuses, 'movements', answered.size);

    // then nothing unexpected was answered, and every kind of movement happened
    expect(unexpected).toEqual([]);
    expect(new Set(answered.values())).toEqual(
      new Set(['credit', 'debit', 'hold', 'transfer', 'confirm', 'cancel', 'reversal']),
    );
    await checkMoneyInvariants(platform.kernel.db);

    // every answered movement is in the history once (a transfer and a reversal of one have two legs)
    const { rows } = await platform.kernel.db.query<{ id: string; type: string; primaries: string }>(
      "SELECT id, min(type) AS type, count(*) FILTER (WHERE leg = 'primary') AS primaries FROM rm.money_transactions WHERE tenant_id = 'mixed' GROUP BY id",
    );
    const history = new Map(rows.map((r) => [r.id, r]));
    for (const [id, type] of answered) {
      expect(history.get(id), `${type} ${id} missing from the history`).toBeDefined();
      expect(Number(history.get(id)!.primaries), `${type} ${id}`).toBe(1);
    }

    // the balances of the read model equal the state stored beside each wallet's stream
    const { rows: drift } = await platform.kernel.db.query(
      `SELECT w.id FROM rm.money_wallets w JOIN es.streams s ON s.stream_id = 'money.wallet:' || w.tenant_id || ':' || w.id
       WHERE w.tenant_id = 'mixed' AND (w.available::text <> s.state->'balance'->>'available' OR w.frozen::text <> s.state->'balance'->>'frozen'
          OR w.pending::text <> s.state->'balance'->>'pending' OR w.version <> s.version)`,
    );
    expect(drift).toEqual([]);
  });
});
