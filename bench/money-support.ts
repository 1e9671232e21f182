import { randomUUID } from 'node:crypto';
import autocannon from 'autocannon';
import { testToken } from '../tests/support/auth';
import type { Body } from '../tests/support/money';
import { MONEY_PERMISSIONS, seedMember } from '../tests/support/money';
import type { ServerProcess } from './support';
import { startServerProcess } from './support';

/**
 * Shared pieces of the money benchmarks: a fresh database on the test PostgreSQL, the money server
 * as a child process (tests/support/service-server.ts, so the load generator does not share its
 * event loop), an HTTP client for the set-up (fetch, keep-alive), and a closed-loop transfer
 * load with latency percentiles.
 */
export type BenchServer = ServerProcess;

export const startBenchServer = (nodeArgs: string[] = []): Promise<BenchServer> =>
  startServerProcess('money', {}, nodeArgs);

/** the set-up client of a bench server; wallet owners are made members of the tenant first (on the server's database) */
export const moneyHttp = (server: Pick<BenchServer, 'url' | 'database'>, tenantId = 'bench') => {
  const url = server.url;
  const auth = `Bearer ${testToken(tenantId, 'bench-user', MONEY_PERMISSIONS)}`;
  const post = async (path: string, body: unknown): Promise<{ status: number; body: Body }> => {
    const res = await fetch(`${url}/v1${path}`, {
      method: 'POST',
      body: JSON.stringify(body),
      headers: { authorization: auth, 'content-type': 'application/json', 'idempotency-key': randomUUID() },
    });
    return { status: res.status, body: await res.json() };
  };
  return {
    post,
    openFunded: async (user: string, amount: number): Promise<string> => {
      await seedMember(server.database.db, tenantId, user);
      const w = await post('/wallets', { userId: user, currency: 'USD' });
      if (w.status !== 201) throw new Error(`open: ${w.status} ${JSON.stringify(w.body)}`);
      if (amount) await post(`/wallets/${w.body.id}/credit`, { amount, currency: 'USD' });
      return w.body.id as string;
    },
  };
};

export interface LoadResult {
  requests: number;
  ok: number;
  perSecond: number;
  p50: number;
  p99: number;
  max: number;
  statuses: Record<number, number>;
}

/**
 * Closed-loop transfers with autocannon (lighter than fetch, so the load generator takes less of
 * the two cores from the server): `connections` connections each send the next transfer when the
 * answer to the previous one arrives, each with a fresh Idempotency-Key, for `seconds` after a
 * one-second warm-up.
 */
export const runTransfers = async (
  url: string,
  seconds: number,
  connections: number,
  pick: () => [string, string],
  tenantId = 'bench',
): Promise<LoadResult> => {
  const authorization = `Bearer ${testToken(tenantId, 'bench-user', MONEY_PERMISSIONS)}`;
  const run = (duration: number) =>
    autocannon({
      url: `${url}/v1/transfers`,
      connections,
      duration,
      requests: [
        {
          method: 'POST',
          setupRequest: (req) => {
            const [fromWalletId, toWalletId] = pick();
            return {
              ...req,
              headers: { authorization, 'content-type': 'application/json', 'idempotency-key': randomUUID() },
              body: JSON.stringify({
                fromWalletId,
                toWalletId,
                amount: 1 + Math.floor(Math.random() * 100),
                currency: 'USD',
              }),
            };
          },
        },
      ],
    });
  await run(1);
  const r = await run(seconds);
  const statuses: Record<number, number> = {};
  for (const [code, v] of Object.entries(r.statusCodeStats ?? {})) statuses[Number(code)] = v.count;
  return {
    requests: r.requests.total,
    ok: r['2xx'],
    perSecond: Math.round(r['2xx'] / seconds),
    p50: r.latency.p50,
    p99: r.latency.p99,
    max: r.latency.max,
    statuses,
  };
};

export const REFERENCES = [
  'pgledger: > 10,000 transfers/s (PostgreSQL only, a laptop; https://github.com/pgr0ss/pgledger)',
  "TigerBeetle's comparison, PostgreSQL baseline: 3,356 transfers/s",
];
