import { describe, expect, it } from 'vitest';
import { isDomainError } from '../../../domain/shared/errors';
import type { OriginalTransaction, ReversalGuard } from '../../../domain/money/reversal';
import { reversalDecider, reversalLegs } from '../../../domain/money/reversal';

const original = (o: Partial<OriginalTransaction> = {}): OriginalTransaction => ({
  id: 'o',
  type: 'debit',
  status: 'completed',
  amount: 100n,
  currency: 'USD',
  walletId: 'w',
  counterpartyWalletId: null,
  createdAt: '2025-01-01T00:00:00.000Z',
  ...o,
});
const reverse = (o: OriginalTransaction, now = '2025-06-01T00:00:00.000Z', state: ReversalGuard = { status: 'none' }) =>
  reversalDecider.decide(
    {
      type: 'Reverse',
      original: o,
      reversalTransactionId: 'r',
      now,
      oldestReversible: new Date(Date.parse(now) - 365 * 86_400_000).toISOString(),
      maxAgeDays: 365,
    },
    state,
  );
const refusal = (fn: () => unknown): string => {
  try {
    fn();
  } catch (e) {
    if (isDomainError(e)) return `${e.status} ${e.suffix}`;
    throw e;
  }
  return 'accepted';
};

describe('a completed debit', () => {
  it('is reversed once: the guard records it', () =>
    expect(reverse(original()).map((e) => e.type)).toEqual(['money.transaction.reversed']));
  it('refuses a second reversal with double-reversal', () =>
    expect(refusal(() => reverse(original(), undefined, { status: 'reversed', reversalTransactionId: 'x' }))).toBe(
      '400 double-reversal',
    ));
  it('refuses after 365 days with reversal-window-expired', () =>
    expect(refusal(() => reverse(original(), '2026-01-02T00:00:00.001Z'))).toBe('400 reversal-window-expired'));
  it('is reversible on day 365', () =>
    expect(refusal(() => reverse(original(), '2026-01-01T00:00:00.000Z'))).toBe('accepted'));
  it('credits the wallet back', () =>
    expect(reversalLegs(original())).toEqual([{ walletId: 'w', direction: 'in', counterpartyWalletId: null }]));
});

describe('holds', () => {
  it('refuses a held hold with hold-not-reversible', () =>
    expect(refusal(() => reverse(original({ type: 'hold', status: 'held' })))).toBe('400 hold-not-reversible'));
  it('refuses a canceled hold', () =>
    expect(refusal(() => reverse(original({ type: 'hold', status: 'canceled' })))).toBe(
      '400 transaction-not-reversible',
    ));
  it('reverses a confirmed hold (a captured payment is refundable)', () =>
    expect(refusal(() => reverse(original({ type: 'hold', status: 'confirmed' })))).toBe('accepted'));
  it('refuses a reversed one with double-reversal', () =>
    expect(refusal(() => reverse(original({ type: 'hold', status: 'reversed' })))).toBe('400 double-reversal'));
});

describe('other transactions', () => {
  it('refuses to reverse a reversal', () =>
    expect(refusal(() => reverse(original({ type: 'reversal' })))).toBe('400 transaction-not-reversible'));
  it('reverses a transfer on both wallets', () =>
    expect(reversalLegs(original({ type: 'transfer', walletId: 'a', counterpartyWalletId: 'b' }))).toEqual([
      { walletId: 'b', direction: 'out', counterpartyWalletId: 'a' },
      { walletId: 'a', direction: 'in', counterpartyWalletId: 'b' },
    ]));
});
