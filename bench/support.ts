import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import { cpus, loadavg, totalmem } from 'node:os';
import type { TestDatabase } from '../tests/support/db';
import { createTestDatabase } from '../tests/support/db';

/** the machine line every BENCHMARKS.md entry carries, with the load average when it is printed (a figure taken under load is not a figure) */
export const machine = (): string =>
  `${cpus().length} cores (${cpus()[0]?.model.trim()}), ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}; load average ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`;

export const percentile = (sorted: number[], p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;

export const summarize = (latenciesMs: number[]) => {
  const s = [...latenciesMs].sort((a, b) => a - b);
  return { p50: percentile(s, 50), p99: percentile(s, 99), n: s.length };
};

/** a fresh, migrated database on the PostgreSQL of scripts/test-infra.sh (or BENCH_DATABASE_URL's server) */
export const benchDatabase = (): Promise<TestDatabase> =>
  createTestDatabase('bench', { serverUrl: process.env.BENCH_DATABASE_URL, poolSize: 40 });

/** runs fn repeatedly on `workers` concurrent loops for `seconds`, collecting per-call latencies */
export const load = async (workers: number, seconds: number, fn: (worker: number, i: number) => Promise<void>) => {
  const latencies: number[] = [];
  const until = performance.now() + seconds * 1000;
  let calls = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: workers }, async (_, w) => {
      for (let i = 0; performance.now() < until; i += 1) {
        const t = performance.now();
        await fn(w, i);
        latencies.push(performance.now() - t);
        calls += 1;
      }
    }),
  );
  return { calls, seconds: (performance.now() - started) / 1000, latencies };
};

export const progress = (label: string, text: string) => process.stderr.write(`[${label}] ${text}\n`);

export interface ServerProcess {
  url: string;
  child: ChildProcess;
  database: TestDatabase;
  stop(): Promise<void>;
}

/**
 * A service's platform as a child process (tests/support/service-server.ts) on a fresh database,
 * so that the load generator does not share its event loop; resolves once it accepts requests.
 * BENCH_SERVER_NODE_ARGS adds arguments of node to every such server, e.g. to profile it:
 * `BENCH_SERVER_NODE_ARGS='--cpu-prof --cpu-prof-dir=/tmp/prof' npx tsx bench/data-crud.ts 8`
 */
export const startServerProcess = async (
  service: string,
  env: Record<string, string> = {},
  nodeArgs: string[] = (process.env.BENCH_SERVER_NODE_ARGS ?? '').split(' ').filter(Boolean),
): Promise<ServerProcess> => {
  const database = await createTestDatabase('bench');
  const child = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', 'tests/support/service-server.ts'], {
    env: { ...process.env, SERVICE: service, DATABASE_URL: database.url, PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
      const m = /READY (\S+)/.exec(out);
      if (m) resolve(m[1]!);
    });
    child.on('exit', (code) => reject(new Error(`server exited ${code}`)));
  });
  return {
    url,
    child,
    database,
    stop: async () => {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
      await database.drop();
    },
  };
};

/**
 * BENCH_SMOKE=1 (set by `npm run bench -- --smoke`): the script runs on tiny inputs — the sizes it
 * does not take as arguments (warm-ups, seeded rows, fixed waits) shrink to a second or so — so
 * that `tests/int/bench-smoke.spec.ts` can run it; the figures of a smoke run mean nothing.
 */
export const smoke = process.env.BENCH_SMOKE === '1';

/** `full` in a benchmark run, `tiny` in a smoke run */
export const smokeOr = <T>(full: T, tiny: T): T => (smoke ? tiny : full);

/** one figure of a benchmark, as `npm run bench` (bench/run.ts) collects it into its table */
export interface BenchFigure {
  /** what was measured, as in the table of BENCHMARKS.md (the script's name is added by bench/run.ts) */
  path: string;
  figure: number;
  /** shown after the figure: '/s', 'events/s', 'ms', 'rps' */
  unit: string;
  /** the aim, as text: '≥ 2,000/s', 'p99 < 100 ms' */
  aim: string;
  /** a peer measured in the same run, on the same machine (PocketBase, a bare Fastify, pgbench…) */
  peer?: string;
  /** the peer's figure, in the same unit */
  peerFigure?: number;
}

/** the line prefix bench/run.ts reads figures from */
export const BENCH_LINE = 'BENCH ';

/** prints one figure as a machine-readable line `BENCH {json}` on stdout (beside the human lines) */
export const report = (figure: BenchFigure): void => {
  process.stdout.write(`${BENCH_LINE}${JSON.stringify(figure)}\n`);
};
