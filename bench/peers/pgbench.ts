/**
 * pgbench (PostgreSQL's own load client, C, libpq) as the peer of the benchmarks whose figure is
 * bounded by PostgreSQL: it runs the statements our code sends — recorded from a real call, with
 * their bound values — as a custom script, with the same number of clients, against the same
 * server, prepared (`-M prepared`: parsed once per connection, the cheapest a client can send
 * them). What it reaches is the ceiling of those statements on this machine, without Node, pg or
 * our code in between.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import type pg from 'pg';
import { smoke } from '../support';

/** node-postgres' own serialization of a bound value (arrays, dates, objects), so the text pgbench sends is the text pg sends */
const { prepareValue } = createRequire(import.meta.url)('pg/lib/utils') as { prepareValue: (v: unknown) => unknown };
const asText = (value: unknown): string => String(prepareValue(value));

export interface Recorded {
  text: string;
  values: unknown[];
}

/** a proxy of a client (Pool, PoolClient) that records every query it forwards */
export const recording = <T extends object>(client: T, into: Recorded[]): T =>
  new Proxy(client, {
    get(target, key, receiver) {
      if (key === 'query')
        // a statement as text and values, or as a query config ({ name, text, values }: a prepared one)
        return (query: string | pg.QueryConfig, values?: unknown[]) => {
          const config = typeof query === 'string' ? { text: query, values } : query;
          into.push({ text: config.text, values: config.values ?? [] });
          return (target as unknown as pg.ClientBase).query(query as string, values);
        };
      return Reflect.get(target, key, receiver) as unknown;
    },
  });

/**
 * A recorded statement as a line of a pgbench script: each `$n` becomes a pgbench variable `:pn`
 * defined with the value pg bound (`-D`), or, for the parameters in `replace`, the text given
 * there (a pgbench variable that changes per transaction, or an expression); NULLs are written in
 * (pgbench has no NULL variable).
 */
export const pgbenchStatement = (
  recorded: Recorded,
  replace: Record<number, string> = {},
): { sql: string; defines: Record<string, string> } => {
  const defines: Record<string, string> = {};
  // highest numbers first, so that $1 does not eat the start of $12
  let sql = recorded.text;
  for (let n = recorded.values.length; n >= 1; n -= 1) {
    const value = recorded.values[n - 1];
    const to =
      replace[n] ?? (value === null || value === undefined ? 'NULL' : ((defines[`p${n}`] = asText(value)), `:p${n}`));
    sql = sql.replace(new RegExp(`\\$${n}(?![0-9])`, 'g'), to);
  }
  return { sql: `${sql.trim().replace(/;$/, '')};`, defines };
};

export interface PgbenchResult {
  transactions: number;
  /** transactions per second, without the connections' set-up */
  tps: number;
  latencyMs: number;
  failed: number;
  seconds: number;
}

/** the pgbench of this machine: PGBENCH, else the one on PATH */
export const PGBENCH = process.env.PGBENCH ?? 'pgbench';

/**
 * Runs a pgbench script (one transaction per run of the script): `clients` connections for
 * `seconds` — or, in a smoke run (BENCH_SMOKE=1), 5 transactions per client, which exercises the
 * script and measures nothing.
 */
export const runPgbench = async (options: {
  url: string;
  script: string;
  clients: number;
  seconds: number;
  defines?: Record<string, string>;
  threads?: number;
}): Promise<PgbenchResult> => {
  const dir = mkdtempSync(join(tmpdir(), 'bench-pgbench-'));
  try {
    const file = join(dir, 'script.sql');
    writeFileSync(file, options.script);
    const args = [
      '-n', // no vacuum of pgbench's own tables (there are none)
      '-M',
      'prepared',
      '-c',
      String(options.clients),
      '-j',
      String(Math.min(options.threads ?? 2, options.clients)),
      ...(smoke ? ['-t', '5'] : ['-T', String(Math.max(1, Math.round(options.seconds)))]),
      '-f',
      file,
      ...Object.entries(options.defines ?? {}).flatMap(([k, v]) => ['-D', `${k}=${v}`]),
      options.url,
    ];
    const started = performance.now();
    const { code, stdout, stderr } = await new Promise<{ code: number | null; stdout: string; stderr: string }>(
      (resolve, reject) => {
        const child = spawn(PGBENCH, args, { stdio: ['ignore', 'pipe', 'pipe'] });
        let out = '';
        let err = '';
        child.stdout.on('data', (c: Buffer) => (out += c.toString()));
        child.stderr.on('data', (c: Buffer) => (err += c.toString()));
        child.on('error', reject);
        child.on('close', (c) => resolve({ code: c, stdout: out, stderr: err }));
      },
    );
    const seconds = (performance.now() - started) / 1000;
    const num = (re: RegExp) => Number(re.exec(stdout)?.[1] ?? NaN);
    const transactions = num(/number of transactions actually processed: (\d+)/);
    if (code !== 0 || !Number.isFinite(transactions))
      throw new Error(`pgbench exited ${code}: ${stderr.trim().split('\n').slice(-5).join(' | ')}`);
    return {
      transactions,
      tps: num(/tps = ([\d.]+) \(without initial connection time\)/),
      latencyMs: num(/latency average = ([\d.]+) ms/),
      failed: num(/number of failed transactions: (\d+)/) || 0,
      seconds,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
};

/** the version line of pgbench, or null when there is none on this machine */
export const pgbenchVersion = async (): Promise<string | null> =>
  new Promise((resolve) => {
    const child = spawn(PGBENCH, ['--version'], { stdio: ['ignore', 'pipe', 'ignore'] });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.on('error', () => resolve(null));
    child.on('close', (code) => resolve(code === 0 ? out.trim() : null));
  });
