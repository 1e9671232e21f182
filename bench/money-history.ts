/**
 * Debit latency on a wallet with 100,000 past transactions versus a new wallet (aim: within 20 %).
 * The long history is written in bulk by SQL in the exact shape the service writes (events, the
 * stream's version and stored state, history rows), then both wallets take sequential debits
 * through the HTTP API, interleaved so that machine noise hits both alike.
 * Usage: source .test-infra/env; npx tsx bench/money-history.ts [history=100000] [debits=300]
 */
import { moneyHttp, startBenchServer } from './money-support';

const history = Number(process.argv[2] ?? 100_000);
const debits = Number(process.argv[3] ?? 300);
const server = await startBenchServer();
try {
  const api = moneyHttp(server);
  const old = await api.openFunded('old', 5_000_000);
  const fresh = await api.openFunded('fresh', 5_000_000);
  const db = server.database.db;
  const stream = `money.wallet:bench:${old}`;
  const t0 = performance.now();
  // 100,000 credits of 1 cent, each with its ledger entries, balanceAfter and history row
  await db.query(
    `
    WITH head AS (SELECT version, (state->'balance'->>'available')::bigint AS available FROM es.streams WHERE stream_id = $1),
    gen AS (SELECT g, gen_random_uuid() AS tx, now() - interval '200 days' + g * interval '1 minute' AS at FROM generate_series(1, $2::int) g)
    INSERT INTO es.events (stream_id, stream_version, event_id, type, schema_version, tenant_id, actor_id, occurred_at, data)
    SELECT $1, head.version + g, gen_random_uuid(), 'money.wallet.credited', 1, 'bench', 'bench', at,
      jsonb_build_object('transactionId', tx::text, 'walletId', $3::text, 'amount', '1', 'currency', 'USD', 'reason', 'seed', 'meta', '{}', 'idempotencyKey', null,
        'entries', jsonb_build_array(jsonb_build_object('account', 'wallet:' || $3 || ':available', 'amount', '1'), jsonb_build_object('account', 'system:USD', 'amount', '-1')),
        'balanceAfter', jsonb_build_object('available', (head.available + g)::text, 'pending', '0', 'frozen', '0'), 'createdAt', to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
    FROM gen, head`,
    [stream, history, old],
  );
  await db.query(
    `
    INSERT INTO rm.money_transactions (tenant_id, id, wallet_id, leg, type, status, direction, amount, currency, reason, idempotency_key, reference_transaction_id, reversed, meta, balance_after, counterparty_wallet_id, expires_at, created_at, seq)
    SELECT 'bench', data->>'transactionId', $2, 'primary', 'credit', 'completed', 'in', 1, 'USD', 'seed', null, null, false, '{}', data->'balanceAfter', null, null, (data->>'createdAt')::timestamptz, stream_version
    FROM es.events WHERE stream_id = $1 AND data->>'reason' = 'seed'`,
    [stream, old],
  );
  await db.query(
    `UPDATE es.streams SET version = version + $2, state = jsonb_set(state, '{balance,available}', to_jsonb(((state->'balance'->>'available')::bigint + $2)::text)) WHERE stream_id = $1`,
    [stream, history],
  );
  await db.query(
    "UPDATE rm.money_wallets SET available = available + $2, version = version + $2 WHERE tenant_id = 'bench' AND id = $1",
    [old, history],
  );
  await db.query('ANALYZE');
  console.log(`seeded ${history} transactions in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

  const times: Record<string, number[]> = { old: [], fresh: [] };
  for (let i = 0; i < debits + 30; i += 1) {
    for (const [label, id] of [
      ['old', old],
      ['fresh', fresh],
    ] as const) {
      const t = performance.now();
      const res = await api.post(`/wallets/${id}/debit`, { amount: 1, currency: 'USD' });
      if (res.status !== 200) throw new Error(`debit ${res.status} ${JSON.stringify(res.body)}`);
      if (i >= 30) times[label]!.push(performance.now() - t);
    }
  }
  const stats = (xs: number[]) => {
    const s = [...xs].sort((a, b) => a - b);
    const q = (p: number) => s[Math.floor(p * (s.length - 1))]!;
    return {
      p50: +q(0.5).toFixed(2),
      p90: +q(0.9).toFixed(2),
      p99: +q(0.99).toFixed(2),
      mean: +(s.reduce((a, b) => a + b, 0) / s.length).toFixed(2),
    };
  };
  const o = stats(times.old!);
  const f = stats(times.fresh!);
  console.log(`debit latency (ms), ${debits} sequential debits each:`, {
    [`wallet with ${history} transactions`]: o,
    'new wallet': f,
    'p50 ratio': +(o.p50 / f.p50).toFixed(3),
    'mean ratio': +(o.mean / f.mean).toFixed(3),
  });
} finally {
  await server.stop();
}
