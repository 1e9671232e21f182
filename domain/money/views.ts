import { z } from 'zod';
import { RawJson } from '../shared/json';
import type { Balance } from './amount';

/**
 * JSON amounts: integers while they are exact in JSON clients (≤ 2^53 − 1, far above any plan's
 * limits), decimal strings beyond.
 */
export const jsonAmount = (v: bigint): number | string =>
  v <= BigInt(Number.MAX_SAFE_INTEGER) && v >= -BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v.toString();
export const AmountOut = z.union([z.number().int(), z.string()]);

export const BalanceView = z.object({ available: AmountOut, pending: AmountOut, frozen: AmountOut });
export type BalanceView = z.infer<typeof BalanceView>;
export const balanceView = (b: Balance): BalanceView => ({
  available: jsonAmount(b.available),
  pending: jsonAmount(b.pending),
  frozen: jsonAmount(b.frozen),
});

export const WalletView = z.object({
  id: z.string(),
  tenantId: z.string(),
  userId: z.string(),
  currency: z.string(),
  label: z.string(),
  balance: BalanceView,
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type WalletView = z.infer<typeof WalletView>;

/** meta in answers: a RawJson (the text as sent); documented as the object it is */
export const MetaOut = z
  .custom<RawJson>((v) => v instanceof RawJson, 'meta must be the JSON text of an object')
  .meta({ type: 'object', additionalProperties: true, description: 'the object sent as meta, exactly as sent' });

export const TransactionView = z.object({
  id: z.string(),
  /** the same as id; the name the credit/debit response of spec 002 uses */
  transactionId: z.string(),
  walletId: z.string(),
  type: z.enum(['credit', 'debit', 'transfer', 'hold', 'confirm', 'cancel', 'reversal']),
  status: z.enum(['completed', 'pending', 'held', 'failed', 'canceled', 'reversed', 'confirmed']),
  amount: AmountOut,
  currency: z.string(),
  reason: z.string(),
  idempotencyKey: z.string().nullable(),
  referenceTransactionId: z.string().nullable(),
  reversed: z.boolean(),
  /** the client's object exactly as sent (its JSON text, written verbatim into the answer) */
  meta: MetaOut,
  balanceAfter: BalanceView,
  createdAt: z.string(),
  /** the other wallet of a transfer (or of a transfer's reversal) */
  counterpartyWalletId: z.string().nullable(),
  /** in: the wallet received the amount; out: it gave it (to the outside, to another wallet or to a hold) */
  direction: z.enum(['in', 'out']),
  /** holds: when the hold lapses */
  expiresAt: z.string().nullable(),
});
export type TransactionView = z.infer<typeof TransactionView>;
