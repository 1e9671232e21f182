import type { TransactionStatus, TransactionType } from '../../domain/money/reversal';
import { RawJson } from '../../domain/shared/json';
import type { BalanceView, TransactionView, WalletView } from '../../domain/money/views';
import { jsonAmount } from '../../domain/money/views';
import type { Queryable } from '../../infra/postgres/db';

/** typed reads of the money read models; every query is filtered by the caller's tenant */

interface WalletRow {
  id: string;
  tenant_id: string;
  user_id: string;
  currency: string;
  label: string;
  available: string;
  pending: string;
  frozen: string;
  created_at: Date;
  updated_at: Date;
}
const WALLET_COLUMNS =
  'id, tenant_id, user_id, currency, label, available::text, pending::text, frozen::text, created_at, updated_at';

export const walletOf = (r: WalletRow): WalletView => ({
  id: r.id,
  tenantId: r.tenant_id,
  userId: r.user_id,
  currency: r.currency,
  label: r.label,
  balance: {
    available: jsonAmount(BigInt(r.available)),
    pending: jsonAmount(BigInt(r.pending)),
    frozen: jsonAmount(BigInt(r.frozen)),
  },
  createdAt: r.created_at.toISOString(),
  updatedAt: r.updated_at.toISOString(),
});

export const findWallet = async (q: Queryable, tenantId: string, id: string): Promise<WalletView | null> => {
  const { rows } = await q.query<WalletRow>(
    `SELECT ${WALLET_COLUMNS} FROM rm.money_wallets WHERE tenant_id = $1 AND id = $2`,
    [tenantId, id],
  );
  return rows[0] ? walletOf(rows[0]) : null;
};

export const listWallets = async (
  q: Queryable,
  tenantId: string,
  f: { userId?: string; currency?: string; afterId?: string; limit: number },
): Promise<WalletRow[]> => {
  const params: unknown[] = [tenantId, f.afterId ?? '', f.limit];
  let where = '';
  if (f.userId) {
    params.push(f.userId);
    where += ` AND user_id = $${params.length}`;
  }
  if (f.currency) {
    params.push(f.currency);
    where += ` AND currency = $${params.length}`;
  }
  const { rows } = await q.query<WalletRow>(
    `SELECT ${WALLET_COLUMNS} FROM rm.money_wallets WHERE tenant_id = $1 AND id > $2${where} ORDER BY id LIMIT $3`,
    params,
  );
  return rows;
};

export interface TransactionRow {
  id: string;
  wallet_id: string;
  type: TransactionType;
  status: TransactionStatus;
  direction: 'in' | 'out';
  amount: string;
  currency: string;
  reason: string;
  idempotency_key: string | null;
  reference_transaction_id: string | null;
  reversed: boolean;
  meta: string;
  balance_after: BalanceView;
  counterparty_wallet_id: string | null;
  expires_at: Date | null;
  created_at: Date;
  seq: number;
}
const TX_COLUMNS = `id, wallet_id, type, status, direction, amount::text, currency, reason, idempotency_key, reference_transaction_id, reversed, meta, balance_after,
  counterparty_wallet_id, expires_at, created_at, seq`;

export const transactionOf = (r: TransactionRow): TransactionView => ({
  id: r.id,
  transactionId: r.id,
  walletId: r.wallet_id,
  type: r.type,
  status: r.status,
  amount: jsonAmount(BigInt(r.amount)),
  currency: r.currency,
  reason: r.reason,
  idempotencyKey: r.idempotency_key,
  referenceTransactionId: r.reference_transaction_id,
  reversed: r.reversed,
  meta: new RawJson(r.meta),
  balanceAfter: r.balance_after,
  createdAt: r.created_at.toISOString(),
  counterpartyWalletId: r.counterparty_wallet_id,
  direction: r.direction,
  expiresAt: r.expires_at?.toISOString() ?? null,
});

export const findTransactionView = async (
  q: Queryable,
  tenantId: string,
  id: string,
): Promise<TransactionView | null> => {
  const { rows } = await q.query<TransactionRow>(
    `SELECT ${TX_COLUMNS} FROM rm.money_transactions WHERE tenant_id = $1 AND id = $2 AND leg = 'primary'`,
    [tenantId, id],
  );
  return rows[0] ? transactionOf(rows[0]) : null;
};

/** where the previous page ended: a wallet's ledger sequence, or (tenant-wide) a line's time and id */
export type TransactionCursor = { seq: number } | { createdAt: string; id: string };

export interface TransactionFilter {
  walletId?: string;
  type?: string;
  status?: string;
  /** ISO 8601 instants in UTC (checked by the route) */
  since?: string;
  until?: string;
  after?: TransactionCursor;
  limit: number;
}

/**
 * Newest first. With walletId: every line of that wallet (both legs of its transfers) in ledger
 * order (seq, the wallet's stream version), so each line's balanceAfter follows from the one
 * before it and the first is the wallet's balance; created_at cannot order them, as commands
 * committed together share it. Without: the tenant's primary lines by time, then id.
 */
export const listTransactions = async (
  q: Queryable,
  tenantId: string,
  f: TransactionFilter,
): Promise<TransactionRow[]> => {
  const params: unknown[] = [tenantId, f.limit];
  const where: string[] = ['tenant_id = $1'];
  const add = (clause: string, ...values: unknown[]) => {
    let text = clause;
    for (const value of values) {
      params.push(value);
      text = text.replace('?', `$${params.length}`);
    }
    where.push(text);
  };
  if (f.walletId) add('wallet_id = ?', f.walletId);
  else where.push("leg = 'primary'");
  if (f.type) add('type = ?', f.type);
  if (f.status) add('status = ?', f.status);
  if (f.since) add('created_at >= ?::timestamptz', f.since);
  if (f.until) add('created_at < ?::timestamptz', f.until);
  const after = f.after;
  if (after && 'seq' in after) add('seq < ?::int', after.seq);
  else if (after && f.walletId) {
    // a token of the time-ordered listing (issued before ledger order): the lines before that line
    add(
      `seq < (SELECT l.seq FROM rm.money_transactions l WHERE l.tenant_id = $1 AND l.wallet_id = ? AND l.id = ? AND l.created_at = ?::timestamptz)`,
      f.walletId,
      after.id,
      after.createdAt,
    );
  } else if (after) add('(created_at, id) < (?::timestamptz, ?)', after.createdAt, after.id);
  const order = f.walletId ? 'seq DESC' : 'created_at DESC, id DESC';
  const { rows } = await q.query<TransactionRow>(
    `SELECT ${TX_COLUMNS} FROM rm.money_transactions WHERE ${where.join(' AND ')} ORDER BY ${order} LIMIT $2`,
    params,
  );
  return rows;
};
