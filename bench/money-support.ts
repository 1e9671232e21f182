import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { testToken } from '../tests/support/auth';
import { createTestDatabase, type TestDatabase } from '../tests/support/db';
import type { Body } from '../tests/support/money';
import { MONEY_PERMISSIONS } from '../tests/support/money';

/**
 * Shared pieces of the money benchmarks: a fresh database on the test PostgreSQL, the money server
 * as a child process (tests/support/money-server.ts, so the load generator does not share its
 * event loop), an HTTP client (fetch, keep-alive), and a closed-loop load runner with latency
 * percentiles.
 */
export interface BenchServer {
  url: string;
  child: ChildProcess;
  database: TestDatabase;
  stop(): Promise<void>;
}

export const startBenchServer = async (extraArgs: string[] = []): Promise<BenchServer> => {
  const database = await createTestDatabase('bench');
  const child = spawn(process.execPath, [...extraArgs, '--import', 'tsx', 'tests/support/money-server.ts'], {
    env: { ...process.env, DATABASE_URL: database.url, PORT: '0' }, stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (c: Buffer) => { out += c.toString(); const m = /READY (\S+)/.exec(out); if (m) resolve(m[1]!); });
    child.on('exit', (code) => reject(new Error(`server exited ${code}`)));
  });
  return {
    url, child, database,
    stop: async () => {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
      await database.drop();
    },
  };
};

export const moneyHttp = (url: string, tenantId = 'bench') => {
  const auth = `Bearer ${testToken(tenantId, 'bench-user', MONEY_PERMISSIONS)}`;
  const post = async (path: string, body: unknown): Promise<{ status: number; body: Body }> => {
    const res = await fetch(`${url}/v1${path}`, {
      method: 'POST', body: JSON.stringify(body),
      headers: { authorization: auth, 'content-type': 'application/json', 'idempotency-key': randomUUID() },
    });
    return { status: res.status, body: await res.json() };
  };
  return {
    post,
    openFunded: async (user: string, amount: number): Promise<string> => {
      const w = await post('/wallets', { userId: user, currency: 'USD' });
      if (w.status !== 201) throw new Error(`open: ${w.status} ${JSON.stringify(w.body)}`);
      if (amount) await post(`/wallets/${w.body.id}/credit`, { amount, currency: 'USD' });
      return w.body.id as string;
    },
  };
};

export interface LoadResult { requests: number; ok: number; perSecond: number; p50: number; p99: number; max: number; statuses: Record<number, number> }

/** runs `concurrency` loops of `call` for `seconds` (after a short warm-up) and reports throughput and latency in ms */
export const runLoad = async (seconds: number, concurrency: number, call: () => Promise<number>): Promise<LoadResult> => {
  const warmUntil = Date.now() + 1000;
  await Promise.all(Array.from({ length: concurrency }, async () => { while (Date.now() < warmUntil) await call(); }));
  const latencies: number[] = [];
  const statuses: Record<number, number> = {};
  const start = performance.now();
  const end = start + seconds * 1000;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (performance.now() < end) {
      const t = performance.now();
      const status = await call();
      latencies.push(performance.now() - t);
      statuses[status] = (statuses[status] ?? 0) + 1;
    }
  }));
  const elapsed = (performance.now() - start) / 1000;
  latencies.sort((a, b) => a - b);
  const pct = (p: number) => Number((latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * p))] ?? 0).toFixed(1));
  const ok = Object.entries(statuses).filter(([s]) => Number(s) < 300).reduce((n, [, v]) => n + v, 0);
  return { requests: latencies.length, ok, perSecond: Math.round(ok / elapsed), p50: pct(0.5), p99: pct(0.99), max: pct(1), statuses };
};

export const REFERENCES = [
  'pgledger: > 10,000 transfers/s (PostgreSQL only, a laptop; https://github.com/pgr0ss/pgledger)',
  "TigerBeetle's comparison, PostgreSQL baseline: 3,356 transfers/s",
];
