import type { OriginalTransaction, TransactionStatus, TransactionType } from '../../domain/money/reversal';
import type { HoldOutcome } from '../../domain/money/wallet';
import type { Queryable } from '../../infra/postgres/db';

/**
 * Lookups the money decisions need, read from the inline history (committed with the events, so
 * exact once the wallets involved are locked).
 */
export interface KnownTransaction extends OriginalTransaction {
  referenceTransactionId: string | null;
  resolution: string | null;
}

interface Row {
  id: string;
  type: TransactionType;
  status: TransactionStatus;
  amount: string;
  currency: string;
  wallet_id: string;
  counterparty_wallet_id: string | null;
  created_at: Date;
  reference_transaction_id: string | null;
  resolution: string | null;
}

/** the primary leg of a transaction of the tenant, or null */
export const findTransaction = async (q: Queryable, tenantId: string, id: string): Promise<KnownTransaction | null> => {
  const { rows } = await q.query<Row>(
    `SELECT id, type, status, amount::text AS amount, currency, wallet_id, counterparty_wallet_id, created_at, reference_transaction_id, resolution
     FROM rm.money_transactions WHERE tenant_id = $1 AND id = $2 AND leg = 'primary'`,
    [tenantId, id],
  );
  const r = rows[0];
  return r
    ? {
        id: r.id,
        type: r.type,
        status: r.status,
        amount: BigInt(r.amount),
        currency: r.currency,
        walletId: r.wallet_id,
        counterpartyWalletId: r.counterparty_wallet_id,
        createdAt: r.created_at.toISOString(),
        referenceTransactionId: r.reference_transaction_id,
        resolution: r.resolution,
      }
    : null;
};

/** how a hold that is no longer active ended */
export const holdOutcome = (t: KnownTransaction | null): HoldOutcome | null => {
  if (!t || t.type !== 'hold') return null;
  if (t.resolution === 'expired') return 'expired';
  if (t.status === 'canceled') return 'canceled';
  if (t.status === 'confirmed' || t.status === 'reversed') return 'confirmed';
  return null;
};

export const userHasWallet = async (
  q: Queryable,
  tenantId: string,
  userId: string,
  currency: string,
): Promise<boolean> =>
  ((
    await q.query('SELECT 1 FROM rm.money_wallets WHERE tenant_id = $1 AND user_id = $2 AND currency = $3', [
      tenantId,
      userId,
      currency,
    ])
  ).rowCount ?? 0) > 0;

/**
 * Who may own a wallet: an active member of the tenant whose account is active too. The kernel's
 * directory of people answers by default (identity's members, inline: a member added or deleted a
 * moment ago counts at once); tests of money alone may install another directory.
 */
export interface MemberDirectory {
  isActiveMember(q: Queryable, tenantId: string, userId: string): Promise<boolean>;
}
