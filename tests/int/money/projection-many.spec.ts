import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StoredEvent } from '../../../domain/shared/event';
import { LOG_START } from '../../../infra/eventstore/event-store';
import { inline } from '../../../infra/postgres/inline';
import type { AnyProjection, Statement } from '../../../infra/projections/projection';
import { fixedClock } from '../../../infra/runtime/clock';
import { transactionsProjection, walletsProjection } from '../../../projections/money';
import { expireDueHolds } from '../../../workers/money/hold-expiry';
import type { MoneyClient } from '../../support/money';
import { moneyClient, moneyServices } from '../../support/money';
import type { TestPlatform } from '../../support/platform';
import { startTestPlatform } from '../../support/platform';

/*
 * The money projections' evolveMany (set-based statements over many events, used by batched
 * commands, catch-up and rebuilds) must leave the rows exactly as evolve applied to each event in
 * turn does. A realistic log is made through the HTTP API (wallets, credits, debits, holds
 * confirmed, canceled, expired and left open, transfers, reversals, concurrent bursts that the
 * batcher groups), then replayed into fresh tables of our own in several ways and compared.
 */

type Events = StoredEvent<Record<string, unknown>>[];
type Apply = (p: AnyProjection, events: Events, tables: Record<string, string>) => Promise<void>;

const clock = fixedClock(new Date());
let platform: TestPlatform;
let events: Events;

const PROJECTIONS: { p: AnyProjection; table: string; short: string; key: string }[] = [
  { p: walletsProjection, table: 'money_wallets', short: 'w', key: 'tenant_id, id' },
  { p: transactionsProjection, table: 'money_transactions', short: 't', key: 'tenant_id, id, wallet_id, created_at' },
];

const ok = async <T extends { status: number; text: string }>(res: Promise<T>, status = 200): Promise<T> => {
  const r = await res;
  expect(r.status, r.text).toBe(status);
  return r;
};

/** one tenant's history: every kind of money event, some of it from concurrent requests */
const makeHistory = async (c: MoneyClient, prefix: string) => {
  const w = await Promise.all([0, 1, 2, 3].map((i) => c.openWallet(`${prefix}-user-${i}`)));
  const [a, b, d, e] = w as [string, string, string, string];
  // a burst per wallet: the batcher commits them in groups
  await Promise.all(
    w.flatMap((id) =>
      [1000, 2000, 3000].map((amount) =>
        ok(c.post(`/wallets/${id}/credit`, { amount, currency: 'USD', meta: { burst: true } })),
      ),
    ),
  );
  const debit = await ok(c.post(`/wallets/${a}/debit`, { amount: 700, currency: 'USD', reason: 'fee' }));
  const credit = await ok(c.post(`/wallets/${b}/credit`, { amount: 50, currency: 'USD', reason: 'bonus' }));
  const confirmed = await ok(c.post(`/wallets/${a}/hold`, { amount: 300, currency: 'USD', ttl: '2h' }));
  const canceled = await ok(c.post(`/wallets/${b}/hold`, { amount: 200, currency: 'USD' }));
  await ok(c.post(`/wallets/${d}/hold`, { amount: 100, currency: 'USD', ttl: '1h', reason: 'expires' }));
  await ok(c.post(`/wallets/${e}/hold`, { amount: 400, currency: 'USD' }));
  await ok(c.post(`/holds/${confirmed.body.id}/confirm`, { reason: 'captured' }));
  await ok(c.post(`/holds/${canceled.body.id}/cancel`, {}));
  // concurrent transfers around the ring, in both directions: shared batches, wallets locked in pairs
  const transfers = await Promise.all(
    w.flatMap((from, i) =>
      [1, 3].map((step) =>
        ok(
          c.post('/transfers', {
            fromWalletId: from,
            toWalletId: w[(i + step) % 4],
            amount: 10 * (i + 1) * step,
            currency: 'USD',
            reason: `ring ${i}/${step}`,
          }),
        ),
      ),
    ),
  );
  // some refusals in the middle of bursts: they record nothing
  const burst = await Promise.all([
    c.post(`/wallets/${d}/debit`, { amount: 1_000_000, currency: 'USD' }),
    c.post(`/wallets/${d}/debit`, { amount: 25, currency: 'USD' }),
    c.post(`/wallets/${e}/credit`, { amount: 75, currency: 'USD' }),
    c.post('/transfers', { fromWalletId: e, toWalletId: d, amount: 1_000_000, currency: 'USD' }),
    c.post('/transfers', { fromWalletId: e, toWalletId: d, amount: 5, currency: 'USD' }),
  ]);
  expect(burst.map((r) => r.status)).toEqual([400, 200, 200, 400, 200]);
  await ok(c.post(`/transactions/${debit.body.id}/reversal`, { reason: 'refund' }));
  await ok(c.post(`/transactions/${credit.body.id}/reversal`, {}));
  await ok(c.post(`/transactions/${transfers[0]!.body.id}/reversal`, {}));
  await ok(c.post(`/transactions/${confirmed.body.id}/reversal`, {}));
};

beforeAll(async () => {
  platform = await startTestPlatform({
    services: moneyServices,
    clock,
    env: { RATE_LIMIT_USER_PER_MIN: '1000000', RATE_LIMIT_TENANT_PER_MIN: '1000000', COMMAND_BATCH_CONCURRENCY: '1' },
  });
  await Promise.all([
    makeHistory(moneyClient(platform.url, 'tenant-a', 'u-admin', { members: platform.kernel.db }), 'a'),
    makeHistory(moneyClient(platform.url, 'tenant-b', 'u-admin', { members: platform.kernel.db }), 'b'),
  ]);
  clock.advance(2 * 3600_000);
  expect((await expireDueHolds(platform.kernel)).expired).toBe(2);
  events = await platform.kernel.store.readAll(platform.kernel.db, LOG_START, 100_000, { allCommitted: true });
  await platform.kernel.db.query('CREATE SCHEMA pm');
});
afterAll(async () => {
  await platform?.close();
});

const db = () => platform.kernel.db;
const handled = (p: AnyProjection, list: Events) => list.filter((e) => p.handles.includes(e.type));
const chunks = <T>(list: T[], size: number): T[][] =>
  Array.from({ length: Math.ceil(list.length / size) }, (_, i) => list.slice(i * size, (i + 1) * size));
const bound = async (statements: Statement[]) => {
  for (const s of statements) await db().query(s.text, s.values);
};

/** each event alone, through evolve, with bound parameters: the reference */
const oneByOne: Apply = async (p, list, tables) => {
  for (const e of handled(p, list)) await bound(p.evolve(e, tables));
};
const many =
  (size: number): Apply =>
  async (p, list, tables) => {
    for (const chunk of chunks(handled(p, list), size)) await bound(p.evolveMany!(chunk, tables));
  };
/** as the batcher sends them: values written in, every statement in one simple-protocol round trip */
const manyInlined: Apply = async (p, list, tables) => {
  const statements = p.evolveMany!(handled(p, list), tables);
  await db().query(statements.map(inline).join(';\n'));
};

/** creates the variant's tables with the projections' own DDL, applies the log, returns the rows of each in key order */
const build = async (variant: string, apply: (p: AnyProjection, tables: Record<string, string>) => Promise<void>) => {
  const rows: Record<string, unknown[]> = {};
  for (const { p, table, short, key } of PROJECTIONS) {
    const physical = `pm.${short}_${variant}`;
    for (const ddl of p.tables[table]!(physical)) await db().query(ddl);
    await apply(p, { [table]: physical });
    rows[table] = (await db().query(`SELECT * FROM ${physical} ORDER BY ${key}`)).rows;
  }
  return rows;
};

describe('given a realistic money log of two tenants', () => {
  let reference: Record<string, unknown[]>;
  beforeAll(async () => {
    reference = await build('one', (p, tables) => oneByOne(p, events, tables));
  });

  it('then it holds every kind of event, and applying them one by one gives every status a history line can have', () => {
    expect(new Set(events.map((e) => e.type))).toEqual(
      new Set([
        'money.wallet.opened',
        'money.wallet.credited',
        'money.wallet.debited',
        'money.wallet.transfer',
        'money.wallet.transfer_received',
        'money.hold.placed',
        'money.hold.confirmed',
        'money.hold.canceled',
        'money.hold.expired',
        'money.wallet.reversal',
        'money.transaction.reversed',
      ]),
    );
    expect(reference.money_wallets).toHaveLength(8);
    const lines = reference.money_transactions as {
      status: string;
      resolution: string | null;
      reversed: boolean;
      type: string;
    }[];
    expect(new Set(lines.map((l) => `${l.type}/${l.status}/${l.resolution ?? '-'}`))).toEqual(
      new Set([
        'credit/completed/-',
        'credit/reversed/-',
        'debit/completed/-',
        'debit/reversed/-',
        'transfer/completed/-',
        'transfer/reversed/-',
        'hold/held/-',
        'hold/canceled/canceled',
        'hold/canceled/expired',
        'hold/reversed/confirmed',
        'confirm/completed/-',
        'cancel/completed/-',
        'reversal/completed/-',
      ]),
    );
    // a credit command records one event: a transaction holding several is a batch of the bursts
    const creditsPerTransaction = new Map<bigint, number>();
    for (const e of events)
      if (e.type === 'money.wallet.credited')
        creditsPerTransaction.set(e.transactionId, (creditsPerTransaction.get(e.transactionId) ?? 0) + 1);
    expect(Math.max(...creditsPerTransaction.values())).toBeGreaterThan(1);
  });

  it.each([
    ['evolveMany over chunks of 1', 'c1', many(1)],
    ['evolveMany over chunks of 7', 'c7', many(7)],
    ['evolveMany over all the events at once', 'all', many(100_000)],
    ['evolveMany over all the events, inlined into one round trip', 'inl', manyInlined],
  ] as const)(
    'when applied with %s, then the rows are those of evolve applied one event at a time',
    async (_name, variant, apply) => {
      expect(await build(variant, (p, tables) => apply(p, events, tables))).toEqual(reference);
    },
  );

  it.each([
    [
      'evolve one by one, the log twice in a row',
      'r1',
      async (p: AnyProjection, tables: Record<string, string>) => {
        await oneByOne(p, events, tables);
        await oneByOne(p, events, tables);
      },
    ],
    [
      'evolveMany over chunks of 7, the log twice in a row',
      'r7',
      async (p: AnyProjection, tables: Record<string, string>) => {
        await many(7)(p, events, tables);
        await many(7)(p, events, tables);
      },
    ],
    [
      'evolveMany over all the events, twice',
      'rall',
      async (p: AnyProjection, tables: Record<string, string>) => {
        await many(100_000)(p, events, tables);
        await many(100_000)(p, events, tables);
      },
    ],
    [
      'evolveMany over the log and itself in one call (every event twice in one statement)',
      'rdup',
      (p: AnyProjection, tables: Record<string, string>) => many(100_000)(p, [...events, ...events], tables),
    ],
    [
      'evolveMany over the log and itself in chunks of 13',
      'rdup13',
      (p: AnyProjection, tables: Record<string, string>) => many(13)(p, [...events, ...events], tables),
    ],
  ] as const)('when replayed with %s, then nothing changes (idempotence)', async (_name, variant, apply) => {
    expect(await build(variant, apply)).toEqual(reference);
  });

  /*
   * The global log is ordered by (transaction_id, position), and a transaction's id is assigned at
   * its first row lock, so a writer that locked another stream first (a transfer, a batch locking
   * its streams in order) can take an older id than the writer that went before it on a shared
   * stream: that stream's v3 then precedes its v2 in readAll. evolve skips the older balance
   * (version guard); evolveMany must keep the highest version of each wallet, not the last one.
   */
  it('when two balance events of one wallet come in the log out of version order, then evolveMany keeps the higher version as evolve does', async () => {
    // a wallet's last two events (the last one decides its balance), swapped
    const stream = events.find((e) => e.type === 'money.wallet.credited')!.streamId;
    const last = Math.max(...events.filter((e) => e.streamId === stream).map((e) => e.streamVersion));
    const i = events.findIndex((e) => e.streamId === stream && e.streamVersion === last - 1);
    const j = events.findIndex((e) => e.streamId === stream && e.streamVersion === last);
    expect(last).toBeGreaterThan(2);
    expect(j).toBeGreaterThan(i);
    const swapped = [...events];
    [swapped[i], swapped[j]] = [events[j]!, events[i]!];
    const one = await build('s1', (p, tables) => oneByOne(p, swapped, tables));
    expect(one).toEqual(reference);
    expect(await build('sall', (p, tables) => many(100_000)(p, swapped, tables))).toEqual(one);
  });

  it('then the live read model, written inline by the commands and their batches, has the same rows', async () => {
    for (const { table, key } of PROJECTIONS) {
      expect((await db().query(`SELECT * FROM rm.${table} ORDER BY ${key}`)).rows).toEqual(reference[table]);
    }
  });
});
