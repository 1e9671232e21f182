import { cpus, totalmem } from 'node:os';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { createPool, type Db } from '../infra/postgres/db';
import { migrate } from '../infra/postgres/migrate';
import '../tests/support/env';

/** the machine line every BENCHMARKS.md entry carries */
export const machine = (): string =>
  `${cpus().length} cores (${cpus()[0]?.model.trim()}), ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`;

export const percentile = (sorted: number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;

export const summarize = (latenciesMs: number[]) => {
  const s = [...latenciesMs].sort((a, b) => a - b);
  return { p50: percentile(s, 50), p99: percentile(s, 99), n: s.length };
};

/** a fresh, migrated database on the PostgreSQL of scripts/test-infra.sh (TEST_DATABASE_URL) */
export const benchDatabase = async (): Promise<{ db: Db; url: string; drop: () => Promise<void> }> => {
  const server = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL;
  if (!server) throw new Error('run scripts/test-infra.sh first (or set BENCH_DATABASE_URL)');
  const name = `bench_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: server });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(server);
  url.pathname = `/${name}`;
  const db = createPool(url.toString(), { max: 40 });
  await migrate(db);
  return {
    db, url: url.toString(),
    drop: async () => {
      await db.end();
      const c = new pg.Client({ connectionString: server });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
};

/** runs fn repeatedly on `workers` concurrent loops for `seconds`, collecting per-call latencies */
export const load = async (workers: number, seconds: number, fn: (worker: number, i: number) => Promise<void>) => {
  const latencies: number[] = [];
  const until = performance.now() + seconds * 1000;
  let calls = 0;
  const started = performance.now();
  await Promise.all(Array.from({ length: workers }, async (_, w) => {
    for (let i = 0; performance.now() < until; i += 1) {
      const t = performance.now();
      await fn(w, i);
      latencies.push(performance.now() - t);
      calls += 1;
    }
  }));
  return { calls, seconds: (performance.now() - started) / 1000, latencies };
};

export const progress = (label: string, text: string) => process.stderr.write(`[${label}] ${text}\n`);
