import type { Decider } from '../shared/decider';
import { assertNever } from '../shared/decider';
import { moneyErrors } from './errors';
import type { ReversalEvent } from './events';

export type TransactionType = 'credit' | 'debit' | 'transfer' | 'hold' | 'confirm' | 'cancel' | 'reversal';
export type TransactionStatus = 'completed' | 'pending' | 'held' | 'failed' | 'canceled' | 'reversed' | 'confirmed';

/** the immutable facts of a transaction that a reversal needs (its primary leg) */
export interface OriginalTransaction {
  id: string;
  type: TransactionType;
  status: TransactionStatus;
  amount: bigint;
  currency: string;
  walletId: string;
  /** the destination of a transfer */
  counterpartyWalletId: string | null;
  createdAt: string;
}

/**
 * The reversal guard of one original transaction: a stream that can be created once, so a
 * transaction is reversed at most once whatever runs concurrently.
 */
export type ReversalGuard = { status: 'none' } | { status: 'reversed'; reversalTransactionId: string };

/** oldestReversible: now minus MONEY_REVERSAL_MAX_AGE_DAYS, computed by the handler (ISO instants compare as strings) */
export type ReversalCommand = {
  type: 'Reverse';
  original: OriginalTransaction;
  reversalTransactionId: string;
  now: string;
  oldestReversible: string;
  maxAgeDays: number;
};

/** spec 002: completed transactions and confirmed holds; never held, canceled or reversed ones */
const requireReversible = (o: OriginalTransaction): void => {
  if (o.status === 'reversed') throw moneyErrors.doubleReversal();
  switch (o.type) {
    case 'hold':
      if (o.status === 'held') throw moneyErrors.holdNotReversible();
      if (o.status !== 'confirmed') throw moneyErrors.notReversible(`A ${o.status} hold cannot be reversed.`);
      return;
    case 'credit':
    case 'debit':
    case 'transfer':
      if (o.status !== 'completed') throw moneyErrors.notReversible(`A ${o.status} transaction cannot be reversed.`);
      return;
    case 'confirm':
    case 'cancel':
    case 'reversal':
      throw moneyErrors.notReversible(
        o.type === 'confirm' ? 'Reverse the confirmed hold instead.' : `A ${o.type} transaction cannot be reversed.`,
      );
    default:
      assertNever(o.type);
  }
};

export const reversalDecider: Decider<ReversalGuard, ReversalCommand, ReversalEvent> = {
  initialState: () => ({ status: 'none' }),
  evolve: (_s, e) => ({ status: 'reversed', reversalTransactionId: e.data.reversalTransactionId }),
  decide: (c, s) => {
    if (s.status === 'reversed') throw moneyErrors.doubleReversal();
    const o = c.original;
    requireReversible(o);
    if (o.createdAt < c.oldestReversible) throw moneyErrors.reversalWindowExpired(c.maxAgeDays);
    return [
      {
        type: 'money.transaction.reversed',
        data: {
          originalTransactionId: o.id,
          reversalTransactionId: c.reversalTransactionId,
          originalType: o.type,
          originalCreatedAt: o.createdAt,
          walletIds: o.counterpartyWalletId ? [o.walletId, o.counterpartyWalletId] : [o.walletId],
          amount: o.amount,
          currency: o.currency,
          reversedAt: c.now,
        },
      },
    ];
  },
};

export interface ReversalLeg {
  walletId: string;
  direction: 'in' | 'out';
  counterpartyWalletId: string | null;
}

/** the counter-movements: what went out comes back, what came in goes out */
export const reversalLegs = (o: OriginalTransaction): ReversalLeg[] => {
  switch (o.type) {
    case 'credit':
      return [{ walletId: o.walletId, direction: 'out', counterpartyWalletId: null }];
    case 'debit':
    case 'hold':
      return [{ walletId: o.walletId, direction: 'in', counterpartyWalletId: null }];
    case 'transfer':
      return [
        { walletId: o.counterpartyWalletId!, direction: 'out', counterpartyWalletId: o.walletId },
        { walletId: o.walletId, direction: 'in', counterpartyWalletId: o.counterpartyWalletId },
      ];
    default:
      return [];
  }
};
