import { describe, expect, it } from 'vitest';
import { sumEntries } from '../../../domain/money/ledger';
import type { WalletEvent } from '../../../domain/money/events';
import { decideTransfer, walletDecider } from '../../../domain/money/wallet';
import { fold } from '../../../domain/shared/decider';
import { cancel, confirm, credit, debit, expire, given, history, hold, limits, opened, T0, W } from './fixtures';

const balanceOf = (events: WalletEvent[]) =>
  events.at(-1)!.type === 'money.wallet.opened'
    ? null
    : (events.at(-1)!.data as { balanceAfter: unknown }).balanceAfter;

describe('no wallet', () => {
  it('refuses a credit with not-found', () => given().when(credit(100n)).thenFails('not-found', 404));
  it('opens a wallet', () =>
    given()
      .when(opened())
      .then((events, after) => {
        expect(events.map((e) => e.type)).toEqual(['money.wallet.opened']);
        expect(after.status).toBe('open');
      }));
  it('refuses a second wallet of the same user and currency', () =>
    given()
      .when({ ...opened(), ownerHasWallet: true } as never)
      .thenFails('duplicate-wallet', 409));
});

describe('an open USD wallet with 1,000', () => {
  const funded = [opened(), credit(1000n)] as const;

  it('credits: available grows and the entries balance against the system account', () =>
    given(...funded)
      .when(credit(50n))
      .then((events) => {
        expect(balanceOf(events)).toEqual({ available: 1050n, pending: 0n, frozen: 0n });
        const e = events[0]!;
        if (e.type !== 'money.wallet.credited') throw new Error(e.type);
        expect(e.data.entries.map((x) => x.account)).toEqual([`wallet:${W}:available`, 'system:USD']);
        expect(sumEntries(e.data.entries)).toBe(0n);
      }));
  it('debits the whole balance down to zero', () =>
    given(...funded)
      .when(debit(1000n))
      .then((events) => expect(balanceOf(events)).toEqual({ available: 0n, pending: 0n, frozen: 0n })));
  it('refuses a debit above the balance with insufficient-funds 400', () =>
    given(...funded)
      .when(debit(1001n))
      .thenFails('insufficient-funds', 400));
  it('refuses another currency', () =>
    given(...funded)
      .when(credit(1n, 'EUR'))
      .thenFails('currency-mismatch', 400));
  it('refuses an amount above the plan maximum with plan-limit-exceeded 402', () =>
    given(...funded)
      .when(credit(limits.maxTxAmount + 1n))
      .thenFails('plan-limit-exceeded', 402));
  it('refuses a credit that would pass the maximum balance', () =>
    given(opened(), ...Array.from({ length: 10 }, () => credit(10_000_000n)))
      .when(credit(1n))
      .thenFails('plan-limit-exceeded', 402));
  it('places a hold: available moves to frozen', () =>
    given(...funded)
      .when(hold(300n, 'h1'))
      .then((events, after) => {
        expect(balanceOf(events)).toEqual({ available: 700n, pending: 0n, frozen: 300n });
        expect(after.status === 'open' && Object.keys(after.holds)).toEqual(['h1']);
      }));
  it('refuses a hold above the available balance', () =>
    given(...funded)
      .when(hold(1001n))
      .thenFails('insufficient-funds', 400));
  it('refuses the hold beyond the maximum count with hold-limit-exceeded 429', () =>
    given(...funded, hold(1n, 'a', undefined, 2), hold(1n, 'b', undefined, 2))
      .when(hold(1n, 'c', undefined, 2))
      .thenFails('hold-limit-exceeded', 429));
});

describe('a wallet with an active hold of 300 (expiring 2025-01-02)', () => {
  const held = [opened(), credit(1000n), hold(300n, 'h1')] as const;

  it('confirms: frozen leaves to the outside', () =>
    given(...held)
      .when(confirm('h1'))
      .then((events, after) => {
        expect(balanceOf(events)).toEqual({ available: 700n, pending: 0n, frozen: 0n });
        expect(after.status === 'open' && after.holds).toEqual({});
      }));
  it('cancels: frozen returns to available', () =>
    given(...held)
      .when(cancel('h1'))
      .then((events) => expect(balanceOf(events)).toEqual({ available: 1000n, pending: 0n, frozen: 0n })));
  it('refuses confirm once the TTL has elapsed with hold-expired 422', () =>
    given(...held)
      .when(confirm('h1', '2025-01-02T00:00:00.000Z'))
      .thenFails('hold-expired', 422));
  it('expires after the TTL', () =>
    given(...held)
      .when(expire('h1', '2025-01-02T00:00:01.000Z'))
      .then((events) => {
        expect(events.map((e) => e.type)).toEqual(['money.hold.expired']);
        expect(balanceOf(events)).toEqual({ available: 1000n, pending: 0n, frozen: 0n });
      }));
  it('does nothing when asked to expire before the TTL', () =>
    given(...held)
      .when(expire('h1', T0))
      .then((events) => expect(events).toEqual([])));
  it('refuses a debit of the frozen funds', () =>
    given(...held)
      .when(debit(701n))
      .thenFails('insufficient-funds'));
});

describe('a wallet whose hold is resolved', () => {
  it('refuses a second confirm: a hold resolves once', () =>
    given(opened(), credit(10n), hold(5n, 'h1'), confirm('h1'))
      .when(confirm('h1', T0, 'confirmed'))
      .thenFails('hold-already-resolved', 409));
  it('refuses cancel after confirm', () =>
    given(opened(), credit(10n), hold(5n, 'h1'), confirm('h1'))
      .when(cancel('h1', T0, 'confirmed'))
      .thenFails('hold-already-resolved', 409));
  it('answers hold-expired for an expired hold', () =>
    given(opened(), credit(10n), hold(5n, 'h1'), expire('h1', '2025-01-03T00:00:00.000Z'))
      .when(cancel('h1', T0, 'expired'))
      .thenFails('hold-expired', 422));
  it('does not expire a confirmed hold', () =>
    given(opened(), credit(10n), hold(5n, 'h1'), confirm('h1'))
      .when(expire('h1', '2025-01-03T00:00:00.000Z'))
      .then((events) => expect(events).toEqual([])));
  it('answers not-found for an unknown hold', () => given(opened()).when(confirm('nope')).thenFails('not-found', 404));
});

describe('a transfer between two USD wallets', () => {
  const a = fold(
    walletDecider,
    history(opened('USD', 'a'), {
      type: 'Credit',
      walletId: 'a',
      transactionId: 'c',
      amount: 500n,
      currency: 'USD',
      reason: '',
      meta: '{}',
      idempotencyKey: null,
      now: T0,
      limits,
    }),
  );
  const b = fold(walletDecider, history(opened('USD', 'b')));
  const e = fold(walletDecider, history(opened('EUR', 'e')));
  const t = (amount: bigint, from = 'a', to = 'b') => ({
    transactionId: 't',
    fromWalletId: from,
    toWalletId: to,
    amount,
    currency: 'USD',
    reason: '',
    meta: '{}',
    idempotencyKey: null,
    now: T0,
    limits,
  });

  it('moves the amount; the two legs sum to zero', () => {
    const d = decideTransfer(t(200n), a, b);
    const legs = [...d.from, ...d.to];
    expect(legs.map((x) => x.type)).toEqual(['money.wallet.transfer', 'money.wallet.transfer_received']);
    expect(sumEntries(legs.flatMap((x) => (x.type === 'money.wallet.opened' ? [] : x.data.entries)))).toBe(0n);
  });
  it('refuses more than the source holds', () =>
    expect(() => decideTransfer(t(501n), a, b)).toThrow(/available balance/));
  it('refuses a transfer to itself', () => expect(() => decideTransfer(t(1n, 'a', 'a'), a, a)).toThrow(/itself/));
  it('refuses another currency', () => expect(() => decideTransfer(t(1n, 'a', 'e'), a, e)).toThrow(/EUR/));
});
