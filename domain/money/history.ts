import { RawJson, withMembers } from '../shared/json';
import type { Balance } from './amount';
import type { WalletEvent } from './events';
import type { TransactionStatus, TransactionType } from './reversal';
import type { TransactionView } from './views';
import { balanceView, jsonAmount } from './views';

/** one wallet's line of a transaction in the history (a transfer has two: primary and counterparty) */
export interface TransactionLeg {
  id: string;
  walletId: string;
  leg: 'primary' | 'counterparty';
  type: TransactionType;
  status: TransactionStatus;
  direction: 'in' | 'out';
  amount: bigint;
  currency: string;
  reason: string;
  idempotencyKey: string | null;
  referenceTransactionId: string | null;
  reversed: boolean;
  /** the JSON text of the client's object, as sent */
  meta: string;
  balanceAfter: Balance;
  counterpartyWalletId: string | null;
  expiresAt: string | null;
  createdAt: string;
}

/** the history line a movement event writes; null for events that are not movements */
export const legOf = (e: WalletEvent): TransactionLeg | null => {
  if (e.type === 'money.wallet.opened') return null;
  const d = e.data;
  const base = {
    id: d.transactionId,
    walletId: d.walletId,
    leg: 'primary' as const,
    status: 'completed' as const,
    amount: d.amount,
    currency: d.currency,
    reason: d.reason,
    idempotencyKey: d.idempotencyKey,
    referenceTransactionId: null,
    reversed: false,
    meta: d.meta,
    balanceAfter: d.balanceAfter,
    counterpartyWalletId: null,
    expiresAt: null,
    createdAt: d.createdAt,
  };
  switch (e.type) {
    case 'money.wallet.credited':
      return { ...base, type: 'credit', direction: 'in' };
    case 'money.wallet.debited':
      return { ...base, type: 'debit', direction: 'out' };
    case 'money.wallet.transfer':
      return { ...base, type: 'transfer', direction: 'out', counterpartyWalletId: e.data.toWalletId };
    case 'money.wallet.transfer_received':
      return {
        ...base,
        leg: 'counterparty',
        type: 'transfer',
        direction: 'in',
        counterpartyWalletId: e.data.fromWalletId,
      };
    case 'money.hold.placed':
      return { ...base, type: 'hold', status: 'held', direction: 'out', expiresAt: e.data.expiresAt };
    case 'money.hold.confirmed':
      return { ...base, type: 'confirm', direction: 'out', referenceTransactionId: e.data.holdTransactionId };
    case 'money.hold.canceled':
      return { ...base, type: 'cancel', direction: 'in', referenceTransactionId: e.data.holdTransactionId };
    case 'money.hold.expired':
      return {
        ...base,
        type: 'cancel',
        direction: 'in',
        referenceTransactionId: e.data.holdTransactionId,
        meta: withMembers(d.meta, { expired: true, expiresAt: e.data.expiresAt }),
      };
    case 'money.wallet.reversal':
      return {
        ...base,
        type: 'reversal',
        direction: e.data.direction,
        referenceTransactionId: e.data.originalTransactionId,
        counterpartyWalletId: e.data.counterpartyWalletId,
        // a transfer's reversal: the leg that pays the original sender back is the primary one
        leg: e.data.counterpartyWalletId === null || e.data.direction === 'in' ? 'primary' : 'counterparty',
      };
    default:
      return null;
  }
};

export const legView = (l: TransactionLeg): TransactionView => ({
  id: l.id,
  transactionId: l.id,
  walletId: l.walletId,
  type: l.type,
  status: l.status,
  amount: jsonAmount(l.amount),
  currency: l.currency,
  reason: l.reason,
  idempotencyKey: l.idempotencyKey,
  referenceTransactionId: l.referenceTransactionId,
  reversed: l.reversed,
  meta: new RawJson(l.meta),
  balanceAfter: balanceView(l.balanceAfter),
  createdAt: l.createdAt,
  counterpartyWalletId: l.counterpartyWalletId,
  direction: l.direction,
  expiresAt: l.expiresAt,
});
