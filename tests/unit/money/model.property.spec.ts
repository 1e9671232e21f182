import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fold } from '../../../domain/shared/decider';
import { isDomainError } from '../../../domain/shared/errors';
import type { WalletEvent } from '../../../domain/money/events';
import { legOf } from '../../../domain/money/history';
import type { PlanLimits } from '../../../domain/money/limits';
import type { ReversalEvent } from '../../../domain/money/events';
import type { OriginalTransaction, ReversalGuard } from '../../../domain/money/reversal';
import { reversalDecider, reversalLegs } from '../../../domain/money/reversal';
import type { Wallet, WalletCommand } from '../../../domain/money/wallet';
import { decideTransfer, walletDecider } from '../../../domain/money/wallet';

/**
 * Model-based: random command sequences run against the deciders (with a tiny in-memory store
 * standing in for streams and the history) and against a model a few lines long. After every
 * step the balances agree, nothing is negative, the ledger sums to zero per currency; over the
 * run each hold resolves at most once and each transaction is reversed at most once.
 */
const WALLETS = ['w0', 'w1', 'w2', 'w3'];
const CURRENCY: Record<string, string> = { w0: 'USD', w1: 'USD', w2: 'USD', w3: 'EUR' };
const limits: PlanLimits = { maxTxAmount: 500n, maxBalance: 2000n };
const DAY = 86_400_000;

type Op =
  | { op: 'credit' | 'debit' | 'hold'; w: number; amount: number }
  | { op: 'transfer'; w: number; to: number; amount: number }
  | { op: 'confirm' | 'cancel' | 'reverse'; pick: number }
  | { op: 'tick'; hours: number }
  | { op: 'expire' };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    arbitrary: fc.record({
      op: fc.constant('credit' as const),
      w: fc.nat(3),
      amount: fc.integer({ min: 1, max: 700 }),
    }),
    weight: 4,
  },
  {
    arbitrary: fc.record({
      op: fc.constantFrom('debit' as const, 'hold' as const),
      w: fc.nat(3),
      amount: fc.integer({ min: 1, max: 700 }),
    }),
    weight: 4,
  },
  {
    arbitrary: fc.record({
      op: fc.constant('transfer' as const),
      w: fc.nat(3),
      to: fc.nat(3),
      amount: fc.integer({ min: 1, max: 700 }),
    }),
    weight: 4,
  },
  {
    arbitrary: fc.record({
      op: fc.constantFrom('confirm' as const, 'cancel' as const, 'reverse' as const),
      pick: fc.nat(50),
    }),
    weight: 5,
  },
  {
    arbitrary: fc.record({
      op: fc.constant('tick' as const),
      hours: fc.oneof(
        { arbitrary: fc.integer({ min: 1, max: 100 }), weight: 5 },
        { arbitrary: fc.integer({ min: 24 * 100, max: 24 * 400 }), weight: 1 },
      ),
    }),
    weight: 2,
  },
  { arbitrary: fc.record({ op: fc.constant('expire' as const) }), weight: 1 },
);

interface ModelTx {
  id: string;
  type: string;
  status: string;
  amount: bigint;
  wallet: string;
  to: string | null;
  createdAt: number;
  holdExpires?: number;
}

class Harness {
  now = Date.parse('2025-01-01T00:00:00.000Z');
  private n = 0;
  readonly streams = new Map<string, WalletEvent[]>();
  readonly guards = new Map<string, ReversalEvent[]>();
  // the model
  readonly balance = new Map<string, { available: bigint; frozen: bigint }>();
  readonly txs: ModelTx[] = [];
  // the store's history (what handlers read)
  readonly history = new Map<string, OriginalTransaction>();

  constructor() {
    for (const w of WALLETS) {
      this.streams.set(
        w,
        walletDecider.decide(
          {
            type: 'OpenWallet',
            walletId: w,
            userId: w,
            currency: CURRENCY[w]!,
            label: '',
            now: this.iso(),
            ownerHasWallet: false,
          },
          { status: 'none' },
        ),
      );
      this.balance.set(w, { available: 0n, frozen: 0n });
    }
  }

  iso(): string {
    return new Date(this.now).toISOString();
  }
  id(): string {
    return `t${++this.n}`;
  }
  private readonly states = new Map<string, Wallet>();
  state(w: string): Wallet {
    return this.states.get(w) ?? fold(walletDecider, this.streams.get(w)!);
  }
  all(): WalletEvent[] {
    return [...this.streams.values()].flat();
  }

  private append(w: string, events: WalletEvent[]): void {
    this.streams.get(w)!.push(...events);
    this.states.set(w, fold(walletDecider, events, this.state(w)));
    for (const e of events) {
      const leg = legOf(e);
      if (leg?.leg === 'primary')
        this.history.set(leg.id, {
          id: leg.id,
          type: leg.type,
          status: leg.status,
          amount: leg.amount,
          currency: leg.currency,
          walletId: leg.walletId,
          counterpartyWalletId: leg.counterpartyWalletId,
          createdAt: leg.createdAt,
        });
      if (e.type === 'money.hold.confirmed' || e.type === 'money.hold.canceled' || e.type === 'money.hold.expired') {
        const h = this.history.get(e.data.holdTransactionId)!;
        h.status = e.type === 'money.hold.confirmed' ? 'confirmed' : 'canceled';
      }
    }
  }

  /** runs an op on both sides; returns whether the system accepted it and whether the model did */
  step(o: Op): void {
    const movement = (w: string, amount: bigint) => ({
      walletId: w,
      transactionId: this.id(),
      amount,
      currency: CURRENCY[w]!,
      reason: '',
      meta: '{}',
      idempotencyKey: null,
      now: this.iso(),
      limits,
    });
    const attempt = (fn: () => void): boolean => {
      try {
        fn();
        return true;
      } catch (e) {
        if (isDomainError(e)) return false;
        throw e;
      }
    };
    switch (o.op) {
      case 'credit':
      case 'debit':
      case 'hold': {
        const w = WALLETS[o.w]!;
        const amount = BigInt(o.amount);
        const m = this.balance.get(w)!;
        const activeHolds = this.txs.filter((t) => t.type === 'hold' && t.status === 'held' && t.wallet === w).length;
        const modelOk =
          amount <= limits.maxTxAmount &&
          (o.op === 'credit'
            ? m.available + m.frozen + amount <= limits.maxBalance
            : m.available >= amount && (o.op === 'debit' || activeHolds < 3));
        const cmd: WalletCommand =
          o.op === 'credit'
            ? { type: 'Credit', ...movement(w, amount) }
            : o.op === 'debit'
              ? { type: 'Debit', ...movement(w, amount) }
              : {
                  type: 'PlaceHold',
                  ...movement(w, amount),
                  expiresAt: new Date(this.now + 72 * 3600_000).toISOString(),
                  maxHolds: 3,
                  slotFreeInSeconds: 1,
                };
        const ok = attempt(() => this.append(w, walletDecider.decide(cmd, this.state(w))));
        expect(ok).toBe(modelOk);
        if (ok) {
          if (o.op === 'credit') m.available += amount;
          else if (o.op === 'debit') m.available -= amount;
          else {
            m.available -= amount;
            m.frozen += amount;
          }
          this.txs.push({
            id: `t${this.n}`,
            type: o.op,
            status: o.op === 'hold' ? 'held' : 'completed',
            amount,
            wallet: w,
            to: null,
            createdAt: this.now,
            holdExpires: this.now + 72 * 3600_000,
          });
        }
        return;
      }
      case 'transfer': {
        const [from, to] = [WALLETS[o.w]!, WALLETS[o.to]!];
        const amount = BigInt(o.amount);
        const [mf, mt] = [this.balance.get(from)!, this.balance.get(to)!];
        const modelOk =
          from !== to &&
          CURRENCY[from] === CURRENCY[to] &&
          amount <= limits.maxTxAmount &&
          mf.available >= amount &&
          mt.available + mt.frozen + amount <= limits.maxBalance;
        const ok = attempt(() => {
          const d = decideTransfer(
            { ...movement(from, amount), fromWalletId: from, toWalletId: to },
            this.state(from),
            this.state(to),
          );
          this.append(from, d.from);
          this.append(to, d.to);
        });
        expect(ok).toBe(modelOk);
        if (ok) {
          mf.available -= amount;
          mt.available += amount;
          this.txs.push({
            id: `t${this.n}`,
            type: 'transfer',
            status: 'completed',
            amount,
            wallet: from,
            to,
            createdAt: this.now,
          });
        }
        return;
      }
      case 'confirm':
      case 'cancel': {
        const holds = this.txs.filter((t) => t.type === 'hold');
        const h = holds[o.pick % Math.max(holds.length, 1)];
        if (!h) return;
        const previously =
          this.history.get(h.id)!.status === 'held'
            ? null
            : h.status === 'expired'
              ? ('expired' as const)
              : h.status === 'canceled'
                ? ('canceled' as const)
                : ('confirmed' as const);
        const modelOk = h.status === 'held' && this.now < h.holdExpires!;
        const ok = attempt(() =>
          this.append(
            h.wallet,
            walletDecider.decide(
              {
                type: o.op === 'confirm' ? 'ConfirmHold' : 'CancelHold',
                walletId: h.wallet,
                holdId: h.id,
                transactionId: this.id(),
                reason: '',
                meta: '{}',
                idempotencyKey: null,
                now: this.iso(),
                previously,
              },
              this.state(h.wallet),
            ),
          ),
        );
        expect(ok).toBe(modelOk);
        if (ok) {
          const m = this.balance.get(h.wallet)!;
          m.frozen -= h.amount;
          if (o.op === 'cancel') m.available += h.amount;
          h.status = o.op === 'confirm' ? 'confirmed' : 'canceled';
        }
        return;
      }
      case 'expire': {
        for (const h of this.txs.filter(
          (t) => t.type === 'hold' && t.status === 'held' && this.now >= t.holdExpires!,
        )) {
          const events = walletDecider.decide(
            {
              type: 'ExpireHold',
              walletId: h.wallet,
              holdId: h.id,
              transactionId: this.id(),
              now: this.iso(),
              tenantId: 't',
            },
            this.state(h.wallet),
          );
          expect(events).toHaveLength(1);
          this.append(h.wallet, events);
          const m = this.balance.get(h.wallet)!;
          m.frozen -= h.amount;
          m.available += h.amount;
          h.status = 'expired';
        }
        return;
      }
      case 'tick':
        this.now += o.hours * 3600_000;
        return;
      case 'reverse': {
        const candidates = this.txs.filter((t) => t.type !== 'reversal');
        const t = candidates[o.pick % Math.max(candidates.length, 1)];
        if (!t) return;
        const original = this.history.get(t.id)!;
        const m = this.balance.get(t.wallet)!;
        const mt = t.to ? this.balance.get(t.to)! : null;
        const reversible =
          (t.type === 'hold' ? t.status === 'confirmed' : t.status === 'completed') &&
          this.now - t.createdAt <= 365 * DAY;
        const funds =
          t.type === 'credit' ? m.available >= t.amount : t.type === 'transfer' ? mt!.available >= t.amount : true;
        const room =
          t.type === 'credit'
            ? true
            : t.type === 'transfer'
              ? m.available + m.frozen + t.amount <= limits.maxBalance
              : m.available + m.frozen + t.amount <= limits.maxBalance;
        const modelOk = reversible && funds && room;
        const ok = attempt(() => {
          const guard: ReversalGuard = fold(reversalDecider, this.guards.get(t.id) ?? []);
          const reversalId = this.id();
          const g = reversalDecider.decide(
            {
              type: 'Reverse',
              original,
              reversalTransactionId: reversalId,
              now: this.iso(),
              oldestReversible: new Date(this.now - 365 * DAY).toISOString(),
              maxAgeDays: 365,
            },
            guard,
          );
          const staged = new Map<string, WalletEvent[]>();
          for (const leg of reversalLegs(original)) {
            staged.set(
              leg.walletId,
              walletDecider.decide(
                {
                  type: 'ApplyReversal',
                  walletId: leg.walletId,
                  transactionId: reversalId,
                  amount: original.amount,
                  currency: original.currency,
                  now: this.iso(),
                  limits,
                  originalTransactionId: original.id,
                  originalCreatedAt: original.createdAt,
                  originalType: original.type,
                  direction: leg.direction,
                  counterpartyWalletId: leg.counterpartyWalletId,
                  reason: '',
                  meta: '{}',
                  idempotencyKey: null,
                },
                this.state(leg.walletId),
              ),
            );
          }
          // all or nothing, as in one transaction
          this.guards.set(t.id, [...(this.guards.get(t.id) ?? []), ...g]);
          for (const [w, events] of staged) this.append(w, events);
          original.status = 'reversed';
        });
        expect(ok).toBe(modelOk);
        if (ok) {
          if (t.type === 'credit') m.available -= t.amount;
          else if (t.type === 'transfer') {
            mt!.available -= t.amount;
            m.available += t.amount;
          } else m.available += t.amount;
          t.status = 'reversed';
        }
        return;
      }
      default:
        throw new Error('unknown op');
    }
  }

  checkInvariants(): void {
    for (const w of WALLETS) {
      const s = this.state(w);
      if (s.status !== 'open') throw new Error('wallet not open');
      const m = this.balance.get(w)!;
      expect({ available: s.balance.available, frozen: s.balance.frozen }).toEqual(m);
      expect(s.balance.available >= 0n && s.balance.frozen >= 0n).toBe(true);
      expect(Object.values(s.holds).reduce((sum, h) => sum + h.amount, 0n)).toBe(s.balance.frozen);
    }
    const perCurrency = new Map<string, bigint>();
    const perTransaction = new Map<string, bigint>();
    for (const e of this.all()) {
      if (e.type === 'money.wallet.opened') continue;
      for (const x of e.data.entries) {
        perCurrency.set(e.data.currency, (perCurrency.get(e.data.currency) ?? 0n) + x.amount);
        perTransaction.set(e.data.transactionId, (perTransaction.get(e.data.transactionId) ?? 0n) + x.amount);
      }
    }
    for (const sum of [...perCurrency.values(), ...perTransaction.values()]) expect(sum).toBe(0n);
    // wallet accounts in the ledger equal the balances (the system account takes the rest)
    for (const w of WALLETS) {
      const accounts = this.all()
        .flatMap((e) => (e.type === 'money.wallet.opened' ? [] : e.data.entries))
        .filter((x) => x.account === `wallet:${w}:available`);
      expect(accounts.reduce((s, x) => s + x.amount, 0n)).toBe(this.balance.get(w)!.available);
    }
    const resolutions = new Map<string, number>();
    for (const e of this.all()) {
      if (e.type === 'money.hold.confirmed' || e.type === 'money.hold.canceled' || e.type === 'money.hold.expired')
        resolutions.set(e.data.holdTransactionId, (resolutions.get(e.data.holdTransactionId) ?? 0) + 1);
    }
    for (const n of resolutions.values()) expect(n).toBe(1);
    for (const events of this.guards.values()) expect(events).toHaveLength(1);
    const reversalsPerOriginal = new Map<string, Set<string>>();
    for (const e of this.all()) {
      if (e.type === 'money.wallet.reversal')
        reversalsPerOriginal.set(
          e.data.originalTransactionId,
          new Set([...(reversalsPerOriginal.get(e.data.originalTransactionId) ?? []), e.data.transactionId]),
        );
    }
    for (const ids of reversalsPerOriginal.values()) expect(ids.size).toBe(1);
  }
}

describe('the money deciders against a model', () => {
  it('agree on every random sequence, and the invariants hold after every step', () => {
    fc.assert(
      fc.property(fc.array(opArb, { minLength: 20, maxLength: 120, size: 'max' }), (ops) => {
        const h = new Harness();
        for (const o of ops) {
          h.step(o);
          h.checkInvariants();
        }
      }),
      { numRuns: 200 },
    );
  }, 120_000);
});
