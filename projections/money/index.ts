import type { StoredEvent } from '../../domain/shared/event';
import { ReversalEvent, WalletEvent, walletEventTypes } from '../../domain/money/events';
import { defineProjections } from '../../infra/services';
import type { Projection, Statement } from '../../infra/projections/projection';
import { sql } from '../../infra/projections/projection';
import { legOf } from '../../domain/money/history';
import type { TransactionLeg } from '../../domain/money/history';
import { balanceView } from '../../domain/money/views';
import { initialPartitions } from './partitions';

const openedSql = (
  t: string,
  stored: StoredEvent<Record<string, unknown>>,
  e: Extract<WalletEvent, { type: 'money.wallet.opened' }>,
): Statement =>
  sql(
    `INSERT INTO ${t} (tenant_id, id, user_id, currency, label, version, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $7)
    ON CONFLICT (tenant_id, id) DO NOTHING`,
    stored.tenantId,
    e.data.walletId,
    e.data.userId,
    e.data.currency,
    e.data.label,
    stored.streamVersion,
    e.data.createdAt,
  );

/**
 * The balances after the last event of each wallet, in one statement: an event carries the whole
 * balance after it, so the last one decides; guarded by the stream version, so applying an event
 * again (or an older one) changes nothing.
 */
const balancesSql = (
  t: string,
  latest: { stored: StoredEvent<Record<string, unknown>>; e: Exclude<WalletEvent, { type: 'money.wallet.opened' }> }[],
): Statement => {
  const values: unknown[] = [];
  const rows = latest.map(({ stored, e }) => {
    const b = e.data.balanceAfter;
    values.push(
      stored.tenantId,
      e.data.walletId,
      b.available.toString(),
      b.pending.toString(),
      b.frozen.toString(),
      stored.streamVersion,
      e.data.createdAt,
    );
    const n = values.length - 7;
    return `($${n + 1}::text, $${n + 2}::text, $${n + 3}::bigint, $${n + 4}::bigint, $${n + 5}::bigint, $${n + 6}::int, $${n + 7}::timestamptz)`;
  });
  return {
    text: `UPDATE ${t} AS w SET available = v.available, pending = v.pending, frozen = v.frozen, version = v.version, updated_at = v.updated_at
      FROM (VALUES ${rows.join(', ')}) AS v(tenant_id, id, available, pending, frozen, version, updated_at)
      WHERE w.tenant_id = v.tenant_id AND w.id = v.id AND w.version < v.version`,
    values,
  };
};

/** wallets and their balances {available, pending, frozen}: inline, readable right after the write */
export const walletsProjection: Projection<'money_wallets'> = {
  name: 'money.wallets',
  version: 2,
  mode: 'inline',
  handles: walletEventTypes,
  tables: {
    money_wallets: (t) => [
      `CREATE TABLE ${t} (tenant_id text NOT NULL, id text NOT NULL, user_id text NOT NULL, currency text NOT NULL, label text NOT NULL,
        available bigint NOT NULL DEFAULT 0, pending bigint NOT NULL DEFAULT 0, frozen bigint NOT NULL DEFAULT 0,
        version int NOT NULL, created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL, PRIMARY KEY (tenant_id, id),
        CHECK (available >= 0 AND frozen >= 0 AND pending >= 0))`,
      // one wallet per user and currency: the handler checks under a lock, this is the last wall
      `CREATE UNIQUE INDEX ON ${t} (tenant_id, user_id, currency)`,
    ],
  },
  evolve: (stored, t) => walletsProjection.evolveMany!([stored], t),
  evolveMany: (events, t) => {
    const opened: Statement[] = [];
    const latest = new Map<
      string,
      { stored: StoredEvent<Record<string, unknown>>; e: Exclude<WalletEvent, { type: 'money.wallet.opened' }> }
    >();
    for (const stored of events) {
      const e = WalletEvent.parse({ type: stored.type, data: stored.data });
      if (e.type === 'money.wallet.opened') opened.push(openedSql(t.money_wallets, stored, e));
      else {
        // the log orders by commit, not by stream version: keep the highest version of each wallet
        const key = `${stored.tenantId}\u0000${e.data.walletId}`;
        const known = latest.get(key);
        if (!known || known.stored.streamVersion < stored.streamVersion) latest.set(key, { stored, e });
      }
    }
    return latest.size ? [...opened, balancesSql(t.money_wallets, [...latest.values()])] : opened;
  },
};

/**
 * history lines as one multi-row insert; a line already there is left as it is. seq is the
 * wallet's stream version after the event: the line's place in the wallet's ledger.
 */
const insertLegs = (table: string, legs: { tenantId: string; seq: number; leg: TransactionLeg }[]): Statement => {
  const values: unknown[] = [];
  const rows = legs.map(({ tenantId, seq, leg: l }) => {
    values.push(
      tenantId,
      l.id,
      l.walletId,
      l.leg,
      l.type,
      l.status,
      l.direction,
      l.amount.toString(),
      l.currency,
      l.reason,
      l.idempotencyKey,
      l.referenceTransactionId,
      l.meta,
      JSON.stringify(balanceView(l.balanceAfter)),
      l.counterpartyWalletId,
      l.expiresAt,
      l.createdAt,
      seq,
    );
    const n = values.length - 18;
    const p = (i: number) => `$${n + i}`;
    return `(${p(1)}, ${p(2)}, ${p(3)}, ${p(4)}, ${p(5)}, ${p(6)}, ${p(7)}, ${p(8)}::bigint, ${p(9)}, ${p(10)}, ${p(11)}, ${p(12)}, false, ${p(13)}, ${p(14)}::jsonb, ${p(15)}, ${p(16)}::timestamptz, ${p(17)}::timestamptz, ${p(18)}::int)`;
  });
  return {
    text: `INSERT INTO ${table} (tenant_id, id, wallet_id, leg, type, status, direction, amount, currency, reason, idempotency_key, reference_transaction_id, reversed, meta,
       balance_after, counterparty_wallet_id, expires_at, created_at, seq)
     VALUES ${rows.join(',\n')}
     ON CONFLICT DO NOTHING`,
    values,
  };
};

const HOLD_RESOLUTION = {
  'money.hold.confirmed': ['confirmed', 'confirmed'],
  'money.hold.canceled': ['canceled', 'canceled'],
  'money.hold.expired': ['canceled', 'expired'],
} as const;

/**
 * The transaction history: one row per wallet a transaction touches (a transfer has a primary leg
 * on the source and a counterparty leg on the destination), partitioned monthly by created_at.
 * Inline: GET /transactions/:id answers right after the write, and confirm, cancel and reversal
 * read a transaction's facts here under the wallet's lock. A wallet's lines are ordered by seq
 * (its ledger order: commands sharing a transaction share created_at); meta is the client's text.
 * v2: seq, and meta as text.
 */
export const transactionsProjection: Projection<'money_transactions'> = {
  name: 'money.transactions',
  version: 2,
  mode: 'inline',
  handles: [...walletEventTypes.filter((t) => t !== 'money.wallet.opened'), 'money.transaction.reversed'],
  tables: {
    money_transactions: (t) => [
      `CREATE TABLE ${t} (tenant_id text NOT NULL, id text NOT NULL, wallet_id text NOT NULL, leg text NOT NULL, type text NOT NULL, status text NOT NULL,
        direction text NOT NULL, amount bigint NOT NULL, currency text NOT NULL, reason text NOT NULL, idempotency_key text, reference_transaction_id text,
        reversed boolean NOT NULL DEFAULT false, meta text NOT NULL, balance_after jsonb NOT NULL, counterparty_wallet_id text, expires_at timestamptz,
        resolution text, created_at timestamptz NOT NULL, seq int NOT NULL, PRIMARY KEY (tenant_id, id, wallet_id, created_at)) PARTITION BY RANGE (created_at)`,
      `CREATE INDEX ON ${t} (tenant_id, wallet_id, seq DESC)`,
      `CREATE INDEX ON ${t} (tenant_id, created_at DESC, id DESC) WHERE leg = 'primary'`,
      `CREATE INDEX ON ${t} (expires_at) WHERE type = 'hold' AND status = 'held'`,
      ...initialPartitions(t, new Date()),
    ],
  },
  evolve: (stored, t) => transactionsProjection.evolveMany!([stored], t),
  /** every new line in one insert, then the status changes (they only touch lines inserted before them) */
  evolveMany: (events, t) => {
    const table = t.money_transactions;
    const legs: { tenantId: string; seq: number; leg: TransactionLeg }[] = [];
    const changes: Statement[] = [];
    for (const stored of events) {
      const tenant = stored.tenantId;
      if (stored.type === 'money.transaction.reversed') {
        const r = ReversalEvent.parse({ type: stored.type, data: stored.data });
        changes.push(
          sql(
            `UPDATE ${table} SET status = 'reversed', reversed = true WHERE tenant_id = $1 AND id = $2 AND created_at = $3`,
            tenant,
            r.data.originalTransactionId,
            r.data.originalCreatedAt,
          ),
        );
        continue;
      }
      const e = WalletEvent.parse({ type: stored.type, data: stored.data });
      const leg = legOf(e);
      if (!leg) continue;
      legs.push({ tenantId: tenant, seq: stored.streamVersion, leg });
      if (e.type === 'money.hold.confirmed' || e.type === 'money.hold.canceled' || e.type === 'money.hold.expired') {
        const [status, resolution] = HOLD_RESOLUTION[e.type];
        changes.push(
          sql(
            `UPDATE ${table} SET status = $4, resolution = $5 WHERE tenant_id = $1 AND id = $2 AND created_at = $3 AND type = 'hold' AND status = 'held'`,
            tenant,
            e.data.holdTransactionId,
            e.data.holdCreatedAt,
            status,
            resolution,
          ),
        );
      }
    }
    return legs.length ? [insertLegs(table, legs), ...changes] : changes;
  },
};

export default defineProjections({ projections: [walletsProjection, transactionsProjection] });
