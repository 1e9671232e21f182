import type { StoredEvent } from '../../domain/shared/event';
import { ReversalEvent, WalletEvent, walletEventTypes } from '../../domain/money/events';
import { defineProjections } from '../../infra/modules';
import type { Projection, Statement } from '../../infra/projections/projection';
import { sql } from '../../infra/projections/projection';
import { legOf } from '../../domain/money/history';
import type { TransactionLeg } from '../../domain/money/history';
import { balanceView } from '../../domain/money/views';
import { initialPartitions } from './partitions';

/** wallets and their balances {available, pending, frozen}: inline, readable right after the write */
export const walletsProjection: Projection<'money_wallets'> = {
  name: 'money.wallets', version: 1, mode: 'inline',
  handles: walletEventTypes,
  tables: {
    money_wallets: (t) => [
      `CREATE TABLE ${t} (tenant_id text NOT NULL, id text NOT NULL, user_id text NOT NULL, currency text NOT NULL, label text NOT NULL,
        available bigint NOT NULL DEFAULT 0, pending bigint NOT NULL DEFAULT 0, frozen bigint NOT NULL DEFAULT 0, active_holds int NOT NULL DEFAULT 0,
        version int NOT NULL, created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL, PRIMARY KEY (tenant_id, id),
        CHECK (available >= 0 AND frozen >= 0 AND pending >= 0))`,
      // one wallet per user and currency: the handler checks under a lock, this is the last wall
      `CREATE UNIQUE INDEX ON ${t} (tenant_id, user_id, currency)`,
    ],
  },
  evolve: (stored, t) => {
    const e = WalletEvent.parse({ type: stored.type, data: stored.data });
    if (e.type === 'money.wallet.opened') {
      return [sql(`INSERT INTO ${t.money_wallets} (tenant_id, id, user_id, currency, label, version, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $7)
        ON CONFLICT (tenant_id, id) DO NOTHING`, stored.tenantId, e.data.walletId, e.data.userId, e.data.currency, e.data.label, stored.streamVersion, e.data.createdAt)];
    }
    const b = e.data.balanceAfter;
    const holds = e.type === 'money.hold.placed' ? 1 : e.type === 'money.hold.confirmed' || e.type === 'money.hold.canceled' || e.type === 'money.hold.expired' ? -1 : 0;
    // guarded by the stream version: applying an event twice changes nothing
    return [sql(`UPDATE ${t.money_wallets} SET available = $3, pending = $4, frozen = $5, active_holds = active_holds + $6, version = $7, updated_at = $8
      WHERE tenant_id = $1 AND id = $2 AND version < $7`,
    stored.tenantId, e.data.walletId, b.available.toString(), b.pending.toString(), b.frozen.toString(), holds, stored.streamVersion, e.data.createdAt)];
  },
};

const insertLeg = (table: string, tenantId: string, l: TransactionLeg): Statement => sql(
  `INSERT INTO ${table} (tenant_id, id, wallet_id, leg, type, status, direction, amount, currency, reason, idempotency_key, reference_transaction_id, reversed, meta,
     balance_after, counterparty_wallet_id, expires_at, created_at)
   VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, false, $13::jsonb, $14::jsonb, $15, $16, $17)
   ON CONFLICT DO NOTHING`,
  tenantId, l.id, l.walletId, l.leg, l.type, l.status, l.direction, l.amount.toString(), l.currency, l.reason, l.idempotencyKey, l.referenceTransactionId,
  JSON.stringify(l.meta), JSON.stringify(balanceView(l.balanceAfter)), l.counterpartyWalletId, l.expiresAt, l.createdAt,
);

const HOLD_RESOLUTION = { 'money.hold.confirmed': ['confirmed', 'confirmed'], 'money.hold.canceled': ['canceled', 'canceled'], 'money.hold.expired': ['canceled', 'expired'] } as const;

/**
 * The transaction history: one row per wallet a transaction touches (a transfer has a primary leg
 * on the source and a counterparty leg on the destination), partitioned monthly by created_at.
 * Inline: GET /transactions/:id answers right after the write, and confirm, cancel and reversal
 * read a transaction's facts here under the wallet's lock.
 */
export const transactionsProjection: Projection<'money_transactions'> = {
  name: 'money.transactions', version: 1, mode: 'inline',
  handles: [...walletEventTypes.filter((t) => t !== 'money.wallet.opened'), 'money.transaction.reversed'],
  tables: {
    money_transactions: (t) => [
      `CREATE TABLE ${t} (tenant_id text NOT NULL, id text NOT NULL, wallet_id text NOT NULL, leg text NOT NULL, type text NOT NULL, status text NOT NULL,
        direction text NOT NULL, amount bigint NOT NULL, currency text NOT NULL, reason text NOT NULL, idempotency_key text, reference_transaction_id text,
        reversed boolean NOT NULL DEFAULT false, meta jsonb NOT NULL, balance_after jsonb NOT NULL, counterparty_wallet_id text, expires_at timestamptz,
        resolution text, created_at timestamptz NOT NULL, PRIMARY KEY (tenant_id, id, wallet_id, created_at)) PARTITION BY RANGE (created_at)`,
      `CREATE INDEX ON ${t} (tenant_id, wallet_id, created_at DESC, id DESC)`,
      `CREATE INDEX ON ${t} (tenant_id, created_at DESC, id DESC) WHERE leg = 'primary'`,
      `CREATE INDEX ON ${t} (expires_at) WHERE type = 'hold' AND status = 'held'`,
      ...initialPartitions(t, new Date()),
    ],
  },
  evolve: (stored: StoredEvent<Record<string, unknown>>, t) => {
    const table = t.money_transactions;
    const tenant = stored.tenantId;
    if (stored.type === 'money.transaction.reversed') {
      const r = ReversalEvent.parse({ type: stored.type, data: stored.data });
      return [sql(`UPDATE ${table} SET status = 'reversed', reversed = true WHERE tenant_id = $1 AND id = $2 AND created_at = $3`,
        tenant, r.data.originalTransactionId, r.data.originalCreatedAt)];
    }
    const e = WalletEvent.parse({ type: stored.type, data: stored.data });
    const leg = legOf(e);
    if (!leg) return [];
    const statements = [insertLeg(table, tenant, leg)];
    if (e.type === 'money.hold.confirmed' || e.type === 'money.hold.canceled' || e.type === 'money.hold.expired') {
      const [status, resolution] = HOLD_RESOLUTION[e.type];
      statements.push(sql(`UPDATE ${table} SET status = $4, resolution = $5 WHERE tenant_id = $1 AND id = $2 AND created_at = $3 AND type = 'hold' AND status = 'held'`,
        tenant, e.data.holdTransactionId, e.data.holdCreatedAt, status, resolution));
    }
    return statements;
  },
};

export default defineProjections({ projections: [walletsProjection, transactionsProjection] });
