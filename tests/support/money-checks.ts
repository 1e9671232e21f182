import { expect } from 'vitest';
import type { Queryable } from '../../infra/postgres/db';

/**
 * The money invariants, checked in the database: no negative balance, the ledger sums to zero per
 * tenant and currency and per transaction, each wallet equals its ledger entries, every stream's
 * version equals its event count, and every transfer has both legs.
 */
export const checkMoneyInvariants = async (db: Queryable): Promise<void> => {
  const negative = await db.query('SELECT id FROM rm.money_wallets WHERE available < 0 OR frozen < 0 OR pending < 0');
  expect(negative.rows).toEqual([]);
  const unbalanced = await db.query(
    `SELECT tenant_id, data->>'currency' AS currency, sum((x->>'amount')::numeric) AS s
     FROM es.events, jsonb_array_elements(data->'entries') x WHERE type LIKE 'money.%' GROUP BY 1, 2 HAVING sum((x->>'amount')::numeric) <> 0`,
  );
  expect(unbalanced.rows).toEqual([]);
  const halfApplied = await db.query(
    `SELECT tenant_id, data->>'transactionId' AS id FROM es.events, jsonb_array_elements(data->'entries') x
     WHERE type LIKE 'money.%' GROUP BY 1, 2 HAVING sum((x->>'amount')::numeric) <> 0`,
  );
  expect(halfApplied.rows).toEqual([]);
  const drift = await db.query(
    `WITH ledger AS (SELECT e.tenant_id, split_part(x->>'account', ':', 2) AS wallet, split_part(x->>'account', ':', 3) AS bucket, sum((x->>'amount')::numeric) AS amount
       FROM es.events e, jsonb_array_elements(e.data->'entries') x WHERE e.type LIKE 'money.%' AND x->>'account' LIKE 'wallet:%' GROUP BY 1, 2, 3)
     SELECT w.id FROM rm.money_wallets w
     WHERE w.available <> COALESCE((SELECT amount FROM ledger l WHERE l.tenant_id = w.tenant_id AND l.wallet = w.id AND l.bucket = 'available'), 0)
        OR w.frozen <> COALESCE((SELECT amount FROM ledger l WHERE l.tenant_id = w.tenant_id AND l.wallet = w.id AND l.bucket = 'frozen'), 0)`,
  );
  expect(drift.rows).toEqual([]);
  const versions = await db.query(
    `SELECT s.stream_id FROM es.streams s WHERE s.stream_id LIKE 'money.%' AND s.version <> (SELECT count(*) FROM es.events e WHERE e.stream_id = s.stream_id)`,
  );
  expect(versions.rows).toEqual([]);
  const oneLegged = await db.query(
    `SELECT tenant_id, id FROM rm.money_transactions WHERE type = 'transfer' GROUP BY 1, 2 HAVING count(*) <> 2`,
  );
  expect(oneLegged.rows).toEqual([]);
};

/** the transfers recorded in the history (primary legs), by id */
export const recordedTransfers = async (db: Queryable, tenantId: string): Promise<Map<string, number>> => {
  const { rows } = await db.query<{ id: string; n: string }>(
    "SELECT id, count(*) AS n FROM rm.money_transactions WHERE tenant_id = $1 AND type = 'transfer' AND leg = 'primary' GROUP BY id",
    [tenantId],
  );
  return new Map(rows.map((r) => [r.id, Number(r.n)]));
};
