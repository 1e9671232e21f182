import { z } from 'zod';
import { Balance, Cents } from './amount';

/**
 * Money events. Every movement carries its double-entry ledger entries (signed cents per account),
 * which sum to zero over each transaction and currency; wallet accounts are
 * wallet:<id>:available and wallet:<id>:frozen, the outside world is the tenant's system:<currency>
 * account (never balance-checked). balanceAfter is the wallet's balance after the event.
 */
export const Entry = z.object({ account: z.string(), amount: Cents });
export type Entry = z.infer<typeof Entry>;

/**
 * meta: the JSON text of the client's object, exactly as sent (docs/decisions.md); events written
 * before meta was kept as text carry the object itself, read as its JSON text.
 */
export const MetaText = z
  .union([z.string(), z.record(z.string(), z.unknown())])
  .transform((v) => (typeof v === 'string' ? v : JSON.stringify(v)));

const movement = {
  transactionId: z.string(),
  walletId: z.string(),
  amount: Cents,
  currency: z.string(),
  reason: z.string(),
  meta: MetaText,
  idempotencyKey: z.string().nullable(),
  entries: z.array(Entry),
  balanceAfter: Balance,
  createdAt: z.string(),
};
const holdResolution = { ...movement, holdTransactionId: z.string(), holdCreatedAt: z.string() };

export const WalletOpened = z.object({
  type: z.literal('money.wallet.opened'),
  data: z.object({
    walletId: z.string(),
    userId: z.string(),
    currency: z.string(),
    label: z.string(),
    createdAt: z.string(),
  }),
});
export const WalletCredited = z.object({ type: z.literal('money.wallet.credited'), data: z.object(movement) });
export const WalletDebited = z.object({ type: z.literal('money.wallet.debited'), data: z.object(movement) });
/** on the source wallet's stream: the transfer as consumers see it */
export const WalletTransfer = z.object({
  type: z.literal('money.wallet.transfer'),
  data: z.object({ ...movement, fromWalletId: z.string(), toWalletId: z.string(), counterpartyWalletId: z.string() }),
});
/** on the destination wallet's stream: its own leg of the same transaction */
export const WalletTransferReceived = z.object({
  type: z.literal('money.wallet.transfer_received'),
  data: z.object({ ...movement, fromWalletId: z.string(), toWalletId: z.string(), counterpartyWalletId: z.string() }),
});
export const HoldPlaced = z.object({
  type: z.literal('money.hold.placed'),
  data: z.object({ ...movement, expiresAt: z.string() }),
});
export const HoldConfirmed = z.object({ type: z.literal('money.hold.confirmed'), data: z.object(holdResolution) });
export const HoldCanceled = z.object({ type: z.literal('money.hold.canceled'), data: z.object(holdResolution) });
/** the TTL elapsed: the worker canceled the hold; carries what an audit consumer needs */
export const HoldExpired = z.object({
  type: z.literal('money.hold.expired'),
  data: z.object({ ...holdResolution, expiresAt: z.string(), tenantId: z.string() }),
});
export const WalletReversal = z.object({
  type: z.literal('money.wallet.reversal'),
  data: z.object({
    ...movement,
    originalTransactionId: z.string(),
    originalCreatedAt: z.string(),
    originalType: z.string(),
    direction: z.enum(['in', 'out']),
    counterpartyWalletId: z.string().nullable(),
  }),
});

export const WalletEvent = z.discriminatedUnion('type', [
  WalletOpened,
  WalletCredited,
  WalletDebited,
  WalletTransfer,
  WalletTransferReceived,
  HoldPlaced,
  HoldConfirmed,
  HoldCanceled,
  HoldExpired,
  WalletReversal,
]);
export type WalletEvent = z.infer<typeof WalletEvent>;
export type WalletEventType = WalletEvent['type'];
export const walletEventTypes = WalletEvent.options.map<WalletEventType>((o) => o.shape.type.value);

/** on the reversal guard stream of the original transaction: it can be created once */
export const TransactionReversed = z.object({
  type: z.literal('money.transaction.reversed'),
  data: z.object({
    originalTransactionId: z.string(),
    reversalTransactionId: z.string(),
    originalType: z.string(),
    originalCreatedAt: z.string(),
    walletIds: z.array(z.string()),
    amount: Cents,
    currency: z.string(),
    reversedAt: z.string(),
  }),
});
export const ReversalEvent = z.discriminatedUnion('type', [TransactionReversed]);
export type ReversalEvent = z.infer<typeof ReversalEvent>;

/** a movement event's data, whatever its type */
export type MovementData = Extract<WalletEvent, { data: { transactionId: string } }>['data'];
export const isMovement = (e: WalletEvent): e is Extract<WalletEvent, { data: { transactionId: string } }> =>
  e.type !== 'money.wallet.opened';
