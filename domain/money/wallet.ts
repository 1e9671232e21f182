import type { Decider } from '../shared/decider';
import { assertNever } from '../shared/decider';
import type { Balance } from './amount';
import { moneyErrors } from './errors';
import type { Entry, WalletEvent } from './events';
import { availableAccount, entry, frozenAccount, systemAccount } from './ledger';
import type { PlanLimits } from './limits';
import { checkBalanceAfter, checkTxAmount } from './limits';

export interface ActiveHold {
  amount: bigint;
  expiresAt: string;
  createdAt: string;
}

/**
 * A wallet: its balance and its active holds (at most MONEY_MAX_HOLDS_PER_WALLET, so the state
 * stays small however long the history). Resolved holds leave the state: a hold resolves once.
 */
export type Wallet =
  | { status: 'none' }
  | {
      status: 'open';
      walletId: string;
      userId: string;
      currency: string;
      label: string;
      createdAt: string;
      balance: Balance;
      holds: Record<string, ActiveHold>;
    };
export type OpenWallet = Extract<Wallet, { status: 'open' }>;

/** what the caller of a movement supplies; now and ids come from the handler */
export interface MovementInput {
  walletId: string;
  transactionId: string;
  amount: bigint;
  currency: string;
  reason: string;
  /** the JSON text of an object */
  meta: string;
  idempotencyKey: string | null;
  now: string;
  limits: PlanLimits;
}

/** how a hold that is no longer active ended, as the transaction history knows it */
export type HoldOutcome = 'confirmed' | 'canceled' | 'expired';

export interface ResolveHoldInput {
  walletId: string;
  holdId: string;
  transactionId: string;
  reason: string;
  /** the JSON text of an object */
  meta: string;
  idempotencyKey: string | null;
  now: string;
  /** for a hold not active on this wallet: how it ended, or null when it never existed here */
  previously: HoldOutcome | null;
}

export type WalletCommand =
  | {
      type: 'OpenWallet';
      walletId: string;
      userId: string;
      currency: string;
      label: string;
      now: string;
      ownerHasWallet: boolean;
    }
  | ({ type: 'Credit' } & MovementInput)
  | ({ type: 'Debit' } & MovementInput)
  | ({
      type: 'PlaceHold';
      expiresAt: string;
      maxHolds: number;
      /** when the wallet's first active hold expires (the 429's Retry-After) */ slotFreeInSeconds: number;
    } & MovementInput)
  | ({ type: 'ConfirmHold' } & ResolveHoldInput)
  | ({ type: 'CancelHold' } & ResolveHoldInput)
  | { type: 'ExpireHold'; walletId: string; holdId: string; transactionId: string; now: string; tenantId: string }
  | ({
      type: 'ApplyReversal';
      originalTransactionId: string;
      originalCreatedAt: string;
      originalType: string;
      direction: 'in' | 'out';
      counterpartyWalletId: string | null;
    } & MovementInput);

/** instants are ISO 8601 UTC strings of one format (toISOString), so they compare as strings: deciders do no clock arithmetic */
export const totalOf = (b: Balance): bigint => b.available + b.pending + b.frozen;

const requireOpen = (s: Wallet): OpenWallet => {
  if (s.status !== 'open') throw moneyErrors.walletNotFound();
  return s;
};

const requireCurrency = (s: OpenWallet, currency: string): void => {
  if (s.currency !== currency) throw moneyErrors.currencyMismatch(s.currency, currency);
};

const requireFunds = (s: OpenWallet, amount: bigint): void => {
  if (s.balance.available < amount) throw moneyErrors.insufficientFunds(s.balance.available, amount);
};

const movementData = (c: Omit<MovementInput, 'limits'>, entries: Entry[], balanceAfter: Balance) => ({
  transactionId: c.transactionId,
  walletId: c.walletId,
  amount: c.amount,
  currency: c.currency,
  reason: c.reason,
  meta: c.meta,
  idempotencyKey: c.idempotencyKey,
  entries,
  balanceAfter,
  createdAt: c.now,
});

const credit = (c: MovementInput, s: Wallet): WalletEvent[] => {
  const w = requireOpen(s);
  requireCurrency(w, c.currency);
  checkTxAmount(c.amount, c.limits);
  checkBalanceAfter(totalOf(w.balance) + c.amount, c.limits);
  const after = { ...w.balance, available: w.balance.available + c.amount };
  return [
    {
      type: 'money.wallet.credited',
      data: movementData(
        c,
        [entry(availableAccount(w.walletId), c.amount), entry(systemAccount(w.currency), -c.amount)],
        after,
      ),
    },
  ];
};

const debit = (c: MovementInput, s: Wallet): WalletEvent[] => {
  const w = requireOpen(s);
  requireCurrency(w, c.currency);
  checkTxAmount(c.amount, c.limits);
  requireFunds(w, c.amount);
  const after = { ...w.balance, available: w.balance.available - c.amount };
  return [
    {
      type: 'money.wallet.debited',
      data: movementData(
        c,
        [entry(availableAccount(w.walletId), -c.amount), entry(systemAccount(w.currency), c.amount)],
        after,
      ),
    },
  ];
};

const placeHold = (c: Extract<WalletCommand, { type: 'PlaceHold' }>, s: Wallet): WalletEvent[] => {
  const w = requireOpen(s);
  requireCurrency(w, c.currency);
  checkTxAmount(c.amount, c.limits);
  if (Object.keys(w.holds).length >= c.maxHolds) throw moneyErrors.holdLimitExceeded(c.maxHolds, c.slotFreeInSeconds);
  requireFunds(w, c.amount);
  const after = { ...w.balance, available: w.balance.available - c.amount, frozen: w.balance.frozen + c.amount };
  return [
    {
      type: 'money.hold.placed',
      data: {
        ...movementData(
          c,
          [entry(availableAccount(w.walletId), -c.amount), entry(frozenAccount(w.walletId), c.amount)],
          after,
        ),
        expiresAt: c.expiresAt,
      },
    },
  ];
};

/** the active hold a confirm or cancel may resolve, or the refusal that fits how it ended */
const activeHold = (c: ResolveHoldInput, w: OpenWallet): ActiveHold => {
  const hold = w.holds[c.holdId];
  if (!hold) {
    if (c.previously === 'expired') throw moneyErrors.holdExpired();
    if (c.previously) throw moneyErrors.holdAlreadyResolved(c.previously);
    throw moneyErrors.holdNotFound();
  }
  if (c.now >= hold.expiresAt) throw moneyErrors.holdExpired();
  return hold;
};

const confirmHold = (c: ResolveHoldInput, s: Wallet): WalletEvent[] => {
  const w = requireOpen(s);
  const hold = activeHold(c, w);
  const after = { ...w.balance, frozen: w.balance.frozen - hold.amount };
  return [
    {
      type: 'money.hold.confirmed',
      data: {
        ...movementData(
          { ...c, amount: hold.amount, currency: w.currency },
          [entry(frozenAccount(w.walletId), -hold.amount), entry(systemAccount(w.currency), hold.amount)],
          after,
        ),
        holdTransactionId: c.holdId,
        holdCreatedAt: hold.createdAt,
      },
    },
  ];
};

const releaseEntries = (w: OpenWallet, amount: bigint): Entry[] => [
  entry(frozenAccount(w.walletId), -amount),
  entry(availableAccount(w.walletId), amount),
];

const cancelHold = (c: ResolveHoldInput, s: Wallet): WalletEvent[] => {
  const w = requireOpen(s);
  const hold = activeHold(c, w);
  const after = { ...w.balance, frozen: w.balance.frozen - hold.amount, available: w.balance.available + hold.amount };
  return [
    {
      type: 'money.hold.canceled',
      data: {
        ...movementData({ ...c, amount: hold.amount, currency: w.currency }, releaseEntries(w, hold.amount), after),
        holdTransactionId: c.holdId,
        holdCreatedAt: hold.createdAt,
      },
    },
  ];
};

/** [] when the hold is gone or not yet due: the worker may run it any number of times */
const expireHold = (c: Extract<WalletCommand, { type: 'ExpireHold' }>, s: Wallet): WalletEvent[] => {
  if (s.status !== 'open') return [];
  const hold = s.holds[c.holdId];
  if (!hold || c.now < hold.expiresAt) return [];
  const after = { ...s.balance, frozen: s.balance.frozen - hold.amount, available: s.balance.available + hold.amount };
  return [
    {
      type: 'money.hold.expired',
      data: {
        transactionId: c.transactionId,
        walletId: s.walletId,
        amount: hold.amount,
        currency: s.currency,
        reason: 'hold expired',
        meta: '{}',
        idempotencyKey: null,
        entries: releaseEntries(s, hold.amount),
        balanceAfter: after,
        createdAt: c.now,
        holdTransactionId: c.holdId,
        holdCreatedAt: hold.createdAt,
        expiresAt: hold.expiresAt,
        tenantId: c.tenantId,
      },
    },
  ];
};

const applyReversal = (c: Extract<WalletCommand, { type: 'ApplyReversal' }>, s: Wallet): WalletEvent[] => {
  const w = requireOpen(s);
  requireCurrency(w, c.currency);
  const signed = c.direction === 'in' ? c.amount : -c.amount;
  if (c.direction === 'out') requireFunds(w, c.amount);
  else checkBalanceAfter(totalOf(w.balance) + c.amount, c.limits);
  const own = entry(availableAccount(w.walletId), signed);
  // a transfer's reversal is two legs on two wallets; otherwise the outside world is the other side
  const entries = c.counterpartyWalletId ? [own] : [own, entry(systemAccount(w.currency), -signed)];
  return [
    {
      type: 'money.wallet.reversal',
      data: {
        ...movementData(c, entries, { ...w.balance, available: w.balance.available + signed }),
        originalTransactionId: c.originalTransactionId,
        originalCreatedAt: c.originalCreatedAt,
        originalType: c.originalType,
        direction: c.direction,
        counterpartyWalletId: c.counterpartyWalletId,
      },
    },
  ];
};

const withoutHold = (holds: Record<string, ActiveHold>, id: string): Record<string, ActiveHold> => {
  const { [id]: _removed, ...rest } = holds;
  return rest;
};

export const walletDecider: Decider<Wallet, WalletCommand, WalletEvent> = {
  initialState: () => ({ status: 'none' }),
  evolve: (s, e) => {
    if (e.type === 'money.wallet.opened') {
      return {
        status: 'open',
        walletId: e.data.walletId,
        userId: e.data.userId,
        currency: e.data.currency,
        label: e.data.label,
        createdAt: e.data.createdAt,
        balance: { available: 0n, pending: 0n, frozen: 0n },
        holds: {},
      };
    }
    if (s.status !== 'open') return s;
    const balance = e.data.balanceAfter;
    switch (e.type) {
      case 'money.wallet.credited':
      case 'money.wallet.debited':
      case 'money.wallet.transfer':
      case 'money.wallet.transfer_received':
      case 'money.wallet.reversal':
        return { ...s, balance };
      case 'money.hold.placed':
        return {
          ...s,
          balance,
          holds: {
            ...s.holds,
            [e.data.transactionId]: { amount: e.data.amount, expiresAt: e.data.expiresAt, createdAt: e.data.createdAt },
          },
        };
      case 'money.hold.confirmed':
      case 'money.hold.canceled':
      case 'money.hold.expired':
        return { ...s, balance, holds: withoutHold(s.holds, e.data.holdTransactionId) };
      default:
        return assertNever(e);
    }
  },
  decide: (c, s) => {
    switch (c.type) {
      case 'OpenWallet':
        if (s.status === 'open' || c.ownerHasWallet) throw moneyErrors.duplicateWallet(c.userId, c.currency);
        return [
          {
            type: 'money.wallet.opened',
            data: { walletId: c.walletId, userId: c.userId, currency: c.currency, label: c.label, createdAt: c.now },
          },
        ];
      case 'Credit':
        return credit(c, s);
      case 'Debit':
        return debit(c, s);
      case 'PlaceHold':
        return placeHold(c, s);
      case 'ConfirmHold':
        return confirmHold(c, s);
      case 'CancelHold':
        return cancelHold(c, s);
      case 'ExpireHold':
        return expireHold(c, s);
      case 'ApplyReversal':
        return applyReversal(c, s);
      default:
        return assertNever(c);
    }
  },
};

export interface TransferInput extends Omit<MovementInput, 'walletId'> {
  fromWalletId: string;
  toWalletId: string;
}

/**
 * A transfer decides on both wallets at once: the source's leg (money.wallet.transfer) and the
 * destination's (money.wallet.transfer_received), whose entries together sum to zero.
 */
export const decideTransfer = (
  c: TransferInput,
  fromState: Wallet,
  toState: Wallet,
): { from: WalletEvent[]; to: WalletEvent[] } => {
  if (c.fromWalletId === c.toWalletId) throw moneyErrors.selfTransfer();
  const from = requireOpen(fromState);
  const to = requireOpen(toState);
  requireCurrency(from, c.currency);
  requireCurrency(to, c.currency);
  checkTxAmount(c.amount, c.limits);
  requireFunds(from, c.amount);
  checkBalanceAfter(totalOf(to.balance) + c.amount, c.limits);
  const parties = { fromWalletId: c.fromWalletId, toWalletId: c.toWalletId };
  return {
    from: [
      {
        type: 'money.wallet.transfer',
        data: {
          ...movementData({ ...c, walletId: c.fromWalletId }, [entry(availableAccount(c.fromWalletId), -c.amount)], {
            ...from.balance,
            available: from.balance.available - c.amount,
          }),
          ...parties,
          counterpartyWalletId: c.toWalletId,
        },
      },
    ],
    to: [
      {
        type: 'money.wallet.transfer_received',
        data: {
          ...movementData({ ...c, walletId: c.toWalletId }, [entry(availableAccount(c.toWalletId), c.amount)], {
            ...to.balance,
            available: to.balance.available + c.amount,
          }),
          ...parties,
          counterpartyWalletId: c.fromWalletId,
        },
      },
    ],
  };
};
