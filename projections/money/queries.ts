import type { TransactionStatus, TransactionType } from '../../domain/money/reversal';
import type { BalanceView, TransactionView, WalletView } from '../../domain/money/views';
import { jsonAmount } from '../../domain/money/views';
import type { Queryable } from '../../infra/postgres/db';

/** typed reads of the money read models; every query is filtered by the caller's tenant */

interface WalletRow {
  id: string; tenant_id: string; user_id: string; currency: string; label: string; available: string; pending: string; frozen: string; created_at: Date; updated_at: Date;
}
const WALLET_COLUMNS = 'id, tenant_id, user_id, currency, label, available::text, pending::text, frozen::text, created_at, updated_at';

export const walletOf = (r: WalletRow): WalletView => ({
  id: r.id, tenantId: r.tenant_id, userId: r.user_id, currency: r.currency, label: r.label,
  balance: { available: jsonAmount(BigInt(r.available)), pending: jsonAmount(BigInt(r.pending)), frozen: jsonAmount(BigInt(r.frozen)) },
  createdAt: r.created_at.toISOString(), updatedAt: r.updated_at.toISOString(),
});

export const findWallet = async (q: Queryable, tenantId: string, id: string): Promise<WalletView | null> => {
  const { rows } = await q.query<WalletRow>(`SELECT ${WALLET_COLUMNS} FROM rm.money_wallets WHERE tenant_id = $1 AND id = $2`, [tenantId, id]);
  return rows[0] ? walletOf(rows[0]) : null;
};

export const listWallets = async (q: Queryable, tenantId: string, f: { userId?: string; currency?: string; afterId?: string; limit: number }): Promise<WalletRow[]> => {
  const params: unknown[] = [tenantId, f.afterId ?? '', f.limit];
  let where = '';
  if (f.userId) { params.push(f.userId); where += ` AND user_id = $${params.length}`; }
  if (f.currency) { params.push(f.currency); where += ` AND currency = $${params.length}`; }
  const { rows } = await q.query<WalletRow>(`SELECT ${WALLET_COLUMNS} FROM rm.money_wallets WHERE tenant_id = $1 AND id > $2${where} ORDER BY id LIMIT $3`, params);
  return rows;
};

export interface TransactionRow {
  id: string; wallet_id: string; type: TransactionType; status: TransactionStatus; direction: 'in' | 'out'; amount: string; currency: string; reason: string;
  idempotency_key: string | null; reference_transaction_id: string | null; reversed: boolean; meta: Record<string, unknown>; balance_after: BalanceView;
  counterparty_wallet_id: string | null; expires_at: Date | null; created_at: Date;
}
const TX_COLUMNS = `id, wallet_id, type, status, direction, amount::text, currency, reason, idempotency_key, reference_transaction_id, reversed, meta, balance_after,
  counterparty_wallet_id, expires_at, created_at`;

export const transactionOf = (r: TransactionRow): TransactionView => ({
  id: r.id, transactionId: r.id, walletId: r.wallet_id, type: r.type, status: r.status, amount: jsonAmount(BigInt(r.amount)), currency: r.currency, reason: r.reason,
  idempotencyKey: r.idempotency_key, referenceTransactionId: r.reference_transaction_id, reversed: r.reversed, meta: r.meta, balanceAfter: r.balance_after,
  createdAt: r.created_at.toISOString(), counterpartyWalletId: r.counterparty_wallet_id, direction: r.direction, expiresAt: r.expires_at?.toISOString() ?? null,
});

export const findTransactionView = async (q: Queryable, tenantId: string, id: string): Promise<TransactionView | null> => {
  const { rows } = await q.query<TransactionRow>(`SELECT ${TX_COLUMNS} FROM rm.money_transactions WHERE tenant_id = $1 AND id = $2 AND leg = 'primary'`, [tenantId, id]);
  return rows[0] ? transactionOf(rows[0]) : null;
};

export interface TransactionFilter {
  walletId?: string;
  type?: string;
  status?: string;
  since?: string;
  until?: string;
  after?: { createdAt: string; id: string };
  limit: number;
}

/** newest first; with walletId every line of that wallet (both legs of its transfers), else the primary lines */
export const listTransactions = async (q: Queryable, tenantId: string, f: TransactionFilter): Promise<TransactionRow[]> => {
  const params: unknown[] = [tenantId, f.limit];
  const where: string[] = ['tenant_id = $1'];
  const add = (clause: string, value: unknown) => { params.push(value); where.push(clause.replace('?', `$${params.length}`)); };
  if (f.walletId) add('wallet_id = ?', f.walletId);
  else where.push("leg = 'primary'");
  if (f.type) add('type = ?', f.type);
  if (f.status) add('status = ?', f.status);
  if (f.since) add('created_at >= ?', f.since);
  if (f.until) add('created_at < ?', f.until);
  if (f.after) {
    params.push(f.after.createdAt, f.after.id);
    where.push(`(created_at, id) < ($${params.length - 1}::timestamptz, $${params.length})`);
  }
  const { rows } = await q.query<TransactionRow>(
    `SELECT ${TX_COLUMNS} FROM rm.money_transactions WHERE ${where.join(' AND ')} ORDER BY created_at DESC, id DESC LIMIT $2`, params);
  return rows;
};
