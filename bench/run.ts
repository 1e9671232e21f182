/**
 * `npm run bench`: every benchmark script of bench/ (or the named ones), one after the other, each
 * in a child process of its own, on the engines of scripts/test-infra.sh (started when down), then
 * one Markdown table of the figures the scripts reported (`report()` of bench/support.ts, lines
 * `BENCH {json}`): path, figure, aim, peer in the same run, ratio, the load average at the script's
 * start — on stdout and in bench/results/latest.md (gitignored), where BENCHMARKS.md takes its
 * figures from.
 *
 * Usage: npm run bench [-- [options] [script…]]
 *   script…          names of bench/*.ts without .ts (default: every benchmark script), each run
 *                    with the argument sets of FULL_RUNS (below) or its defaults
 *   --allow-load     start even when the 1-minute load average is above 1.5 (smoke runs only:
 *                    figures taken under load are not figures)
 *   --smoke          tiny inputs (BENCH_SMOKE=1 and the smoke arguments below): checks that every
 *                    script runs, measures nothing; writes bench/results/smoke.md, not latest.md
 *   --out=<file>     where the table goes (default bench/results/latest.md, smoke.md with --smoke)
 *   --json=<file>    also write the results as JSON (per script: exit code, seconds, figures)
 *   --timeout=<s>    stop a script that runs longer (default: none; 180 with --smoke)
 *   --jobs=<n>       with --smoke only: run n scripts at once (default 1)
 * Arguments after `--args` on the command line are passed to every script named (a subset with
 * the script's own arguments: `npm run bench -- relay --args 100000 20`).
 */
import type { ChildProcess } from 'node:child_process';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { loadavg } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BenchFigure } from './support';
import { BENCH_LINE, machine } from './support';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const BENCH_DIR = join(ROOT, 'bench');
/** the 1-minute load average above which a benchmark run does not start (BENCH_MAX_LOAD: for the smoke test of the rule only) */
export const MAX_LOAD = Number(process.env.BENCH_MAX_LOAD ?? 1.5);
const UNDER_LOAD = 'figures taken under load are not figures';

/** files of bench/ that are not benchmarks: shared pieces, the load client gateway-overhead starts, this runner */
const HELPERS = new Set(['support', 'run', 'gateway-load-client']);
const isHelper = (name: string) => HELPERS.has(name) || name.endsWith('-support');

/**
 * The arguments of each script's smoke run (with BENCH_SMOKE=1): a second or so of load, a few
 * rows. Every script has an entry (tests/int/bench-smoke.spec.ts checks it), [] for none.
 */
export const SMOKE_ARGS: Record<string, string[]> = {
  'access-epoch': ['200'],
  'audit-export': ['1000'],
  'audit-ingest': ['2000', '2', '500'],
  'audit-latest': ['1000', '10', '10'],
  'billing-checklimit': ['200', '1', '5'],
  'billing-gateway-check': ['1000', '5'],
  'billing-webhooks': ['1', '4'],
  'data-crud': ['1', '1000', '4'],
  eventstore: ['1'],
  'events-bus': ['1', '50', '--dlq=5'],
  'files-thumbnail': ['1'],
  'files-upload': ['5', '2', '0.1'],
  'files-upload-memory': ['1', '1'],
  'gateway-edge-cpu': ['inproc', '200', '1'],
  'gateway-overhead': ['200', '1', '1'],
  'gateway-throughput': ['4', '1'],
  'identity-logins': ['2'],
  'identity-refresh': ['2'],
  'identity-verify': ['200'],
  'jwt-verify': ['200'],
  'money-history': ['100', '5'],
  'money-transfers': ['1', '4'],
  'notify-accept': ['1', '4'],
  'notify-email': ['20'],
  'notify-socket-fanout': ['20', '1'],
  passwords: [],
  projection: ['2000'],
  relay: ['1000', '1'],
};

/** the scripts that report figures (issue 25's table): a smoke run fails when one of them reports none */
export const REPORTING = [
  'data-crud',
  'audit-ingest',
  'events-bus',
  'notify-socket-fanout',
  'billing-checklimit',
  'files-upload',
  'eventstore',
  'relay',
  'projection',
  'money-transfers',
  'identity-refresh',
  'gateway-overhead',
  'gateway-throughput',
];

/**
 * The argument sets a script runs with in a full run (no --args, no --smoke), each a run of its own
 * in the table: the conditions issue 25's table names where a script's defaults differ (the bus on
 * Kafka at 1,000/s; the gateway with one and with two HTTP workers; the data list over 100,000 rows,
 * which PocketBase's peer also seeds). A script not named here runs once with its defaults.
 */
export const FULL_RUNS: Record<string, string[][]> = {
  'events-bus': [['10', '1000', '--kafka']],
  'gateway-throughput': [
    ['64', '15', '0', 'workers=1'],
    ['64', '15', '0', 'workers=2'],
  ],
  'data-crud': [['10', '100000', '32']],
};

/** every benchmark script of bench/, by name */
export const benchScripts = (): string[] =>
  readdirSync(BENCH_DIR)
    .filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))
    .map((f) => f.slice(0, -3))
    .filter((n) => !isHelper(n))
    .sort();

export interface ScriptResult {
  script: string;
  args: string[];
  exitCode: number | null;
  signal: string | null;
  seconds: number;
  loadAtStart: number;
  figures: BenchFigure[];
  /** BENCH lines that were not valid figures */
  malformed: string[];
}

interface Options {
  scripts: string[];
  allowLoad: boolean;
  smoke: boolean;
  out: string;
  json: string | null;
  timeoutSeconds: number;
  jobs: number;
  args: string[] | null;
}

const parseOptions = (argv: string[]): Options => {
  const at = argv.indexOf('--args');
  const own = at === -1 ? argv : argv.slice(0, at);
  const option = (name: string) => own.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
  const smoke = own.includes('--smoke');
  const known = ['--allow-load', '--smoke', '--out=', '--json=', '--timeout=', '--jobs='];
  const unknown = own.filter((a) => a.startsWith('--') && !known.some((k) => a === k || a.startsWith(k)));
  if (unknown.length) fail(`unknown option ${unknown.join(' ')} (see the usage at the top of bench/run.ts)`);
  const all = benchScripts();
  const named = own.filter((a) => !a.startsWith('--')).map((n) => n.replace(/^bench\//, '').replace(/\.ts$/, ''));
  const count = (name: string, fallback: number, min: number) => {
    const n = Number(option(name) ?? fallback);
    if (!Number.isInteger(n) || n < min) fail(`--${name} takes a whole number ≥ ${min}, not ${option(name)}`);
    return n;
  };
  const missing = named.filter((n) => !all.includes(n));
  if (missing.length) fail(`no benchmark script ${missing.join(', ')}; there are: ${all.join(', ')}`);
  return {
    scripts: named.length ? named : all,
    allowLoad: own.includes('--allow-load'),
    smoke,
    out: resolve(ROOT, option('out') ?? join('bench', 'results', smoke ? 'smoke.md' : 'latest.md')),
    json: option('json') ? resolve(ROOT, option('json')!) : null,
    timeoutSeconds: count('timeout', smoke ? 180 : 0, 0),
    jobs: count('jobs', 1, 1),
    args: at === -1 ? null : argv.slice(at + 1),
  };
};

function fail(message: string): never {
  process.stderr.write(`[bench] ${message}\n`);
  process.exit(2);
}

const log = (text: string) => process.stderr.write(`[bench] ${text}\n`);
/** set by Ctrl-C or SIGTERM: the running script is stopped, the others are not started, the table covers what ran */
let interrupted = false;

/** `export NAME=value` lines of .test-infra/env (written by scripts/test-infra.sh) */
const readInfraEnv = (file: string): Record<string, string> => {
  const env: Record<string, string> = {};
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const m = /^\s*export\s+([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(line);
    if (m) env[m[1]!] = m[2]!.replace(/^(['"])(.*)\1$/, '$2');
  }
  return env;
};

const reachable = (host: string, port: number, timeoutMs = 2000): Promise<boolean> =>
  new Promise((done) => {
    const socket = connect({ host, port });
    const finish = (ok: boolean) => {
      socket.destroy();
      done(ok);
    };
    socket.setTimeout(timeoutMs, () => finish(false));
    socket.once('connect', () => finish(true));
    socket.once('error', () => finish(false));
  });

/** the engines' addresses in the env file: PostgreSQL, Redis, Kafka, S3Proxy, clamd */
const endpoints = (env: Record<string, string>): [string, number][] => {
  const out: [string, number][] = [];
  for (const name of ['TEST_DATABASE_URL', 'TEST_REDIS_URL', 'TEST_S3_ENDPOINT']) {
    const value = env[name];
    if (!value) return [];
    const u = new URL(value);
    out.push([u.hostname, Number(u.port)]);
  }
  const broker = env.TEST_KAFKA_BROKERS?.split(',')[0];
  if (!broker || !env.TEST_CLAMD_HOST) return [];
  const [host, port] = broker.split(':');
  out.push([host!, Number(port)], [env.TEST_CLAMD_HOST, Number(env.TEST_CLAMD_PORT)]);
  return out;
};

/** the test engines' environment, as scripts/test.sh has it: started by scripts/test-infra.sh unless they all answer */
const infraEnv = async (): Promise<Record<string, string>> => {
  const file = join(ROOT, '.test-infra', 'env');
  if (existsSync(file)) {
    const env = readInfraEnv(file);
    const addresses = endpoints(env);
    if (addresses.length && (await Promise.all(addresses.map(([h, p]) => reachable(h, p)))).every(Boolean)) return env;
  }
  log('the test engines are not all running: starting them (scripts/test-infra.sh)');
  const started = spawnSync('bash', [join(ROOT, 'scripts', 'test-infra.sh')], { stdio: ['ignore', 2, 2] });
  if (started.status !== 0) fail(`scripts/test-infra.sh exited with ${started.status}: the engines did not start`);
  return readInfraEnv(file);
};

const parseFigure = (json: string): BenchFigure | null => {
  try {
    const f = JSON.parse(json) as BenchFigure;
    const ok =
      typeof f.path === 'string' &&
      typeof f.figure === 'number' &&
      typeof f.unit === 'string' &&
      typeof f.aim === 'string' &&
      (f.peer === undefined || typeof f.peer === 'string') &&
      (f.peerFigure === undefined || typeof f.peerFigure === 'number');
    return ok ? f : null;
  } catch {
    return null;
  }
};

/** forwards a stream line by line, prefixed with the script's name, and gives each line to `onLine` */
const lines = (stream: NodeJS.ReadableStream, onLine: (line: string) => void) => {
  let rest = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    const parts = (rest + chunk).split('\n');
    rest = parts.pop()!;
    for (const l of parts) onLine(l);
  });
  stream.on('end', () => {
    if (rest) onLine(rest);
  });
};

const runScript = (
  script: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  timeoutSeconds: number,
  position: string,
): Promise<ScriptResult> =>
  new Promise((done) => {
    const loadAtStart = loadavg()[0]!;
    const started = performance.now();
    const figures: BenchFigure[] = [];
    const malformed: string[] = [];
    log(`${position} ${script} ${args.join(' ')} — started (load average ${loadAtStart.toFixed(2)})`);
    const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', join('bench', `${script}.ts`), ...args], {
      cwd: ROOT,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true, // its own process group: a timeout stops what it started too
    });
    // the script's process group is not the terminal's: Ctrl-C (or a TERM) of the run reaches it through here
    const forward = (signal: NodeJS.Signals) => {
      try {
        process.kill(-child.pid!, signal);
      } catch {
        /* gone */
      }
      interrupted = true;
    };
    process.on('SIGINT', forward).on('SIGTERM', forward);
    lines(child.stdout!, (line) => {
      if (line.startsWith(BENCH_LINE)) {
        const f = parseFigure(line.slice(BENCH_LINE.length));
        if (f) figures.push(f);
        else malformed.push(line);
      } else process.stdout.write(`${script} | ${line}\n`);
    });
    lines(child.stderr!, (line) => process.stderr.write(`${script} ! ${line}\n`));
    const elapsed = () => (performance.now() - started) / 1000;
    const ticker = setInterval(() => log(`${position} ${script} — running, ${elapsed().toFixed(0)} s`), 15_000);
    let timedOut = false;
    const timer =
      timeoutSeconds > 0
        ? setTimeout(() => {
            timedOut = true;
            log(`${script} — still running after ${timeoutSeconds} s: stopping it`);
            try {
              process.kill(-child.pid!, 'SIGTERM');
              setTimeout(() => {
                try {
                  process.kill(-child.pid!, 'SIGKILL');
                } catch {
                  /* gone */
                }
              }, 10_000).unref();
            } catch {
              /* gone */
            }
          }, timeoutSeconds * 1000)
        : null;
    child.on('close', (code, signal) => {
      process.off('SIGINT', forward).off('SIGTERM', forward);
      clearInterval(ticker);
      if (timer) clearTimeout(timer);
      const seconds = elapsed();
      const exitCode = timedOut ? null : code;
      log(
        `${position} ${script} — ${exitCode === 0 ? 'done' : `FAILED (${timedOut ? 'timed out' : (signal ?? `exit ${code}`)})`} in ${seconds.toFixed(1)} s, ${figures.length} figure(s)`,
      );
      done({ script, args, exitCode, signal: timedOut ? 'timeout' : signal, seconds, loadAtStart, figures, malformed });
    });
  });

const number = (n: number): string => {
  const abs = Math.abs(n);
  const digits = abs >= 100 ? 0 : abs >= 10 ? 1 : abs >= 1 ? 2 : 3;
  return n.toLocaleString('en', { maximumFractionDigits: digits, minimumFractionDigits: 0 });
};
const withUnit = (n: number, unit: string) => `${number(n)}${/^[/%]/.test(unit) ? '' : ' '}${unit}`;
const cell = (text: string) => text.replace(/\|/g, '\\|').replace(/\n/g, ' ');

/** the table: one row per figure, in the order the scripts ran */
export const markdownTable = (results: ScriptResult[]): string => {
  const rows = ['| path | figure | aim | peer in the same run | ratio | load at start |', '|---|---|---|---|---|---|'];
  for (const r of results)
    for (const f of r.figures) {
      const peer = f.peer ? `${f.peer}${f.peerFigure === undefined ? '' : `: ${withUnit(f.peerFigure, f.unit)}`}` : '';
      const ratio = f.peerFigure ? `${(f.figure / f.peerFigure).toFixed(2)}×` : '';
      rows.push(
        `| ${cell(`${f.path} (${r.script})`)} | ${cell(withUnit(f.figure, f.unit))} | ${cell(f.aim)} | ${cell(peer)} | ${ratio} | ${r.loadAtStart.toFixed(2)} |`,
      );
    }
  return rows.join('\n');
};

export const markdownReport = (
  results: ScriptResult[],
  context: { machine: string; command: string; startedAt: Date; underLoad: boolean; smoke: boolean },
): string => {
  const failed = results.filter((r) => r.exitCode !== 0);
  const silent = results.filter((r) => r.exitCode === 0 && r.figures.length === 0);
  const out = [
    `# Benchmark run ${context.startedAt.toISOString()}`,
    '',
    `Command: \`${context.command}\``,
    '',
    `Machine: ${context.machine}`,
    '',
  ];
  if (context.smoke) out.push('**Smoke run (BENCH_SMOKE=1, tiny inputs): these figures measure nothing.**', '');
  if (context.underLoad) out.push(`**Started under load (--allow-load): ${UNDER_LOAD}.**`, '');
  out.push(markdownTable(results), '');
  out.push(`Scripts: ${results.map((r) => `${r.script} ${r.seconds.toFixed(0)} s`).join(', ')}.`, '');
  if (silent.length) out.push(`No figures reported (human lines only): ${silent.map((r) => r.script).join(', ')}.`, '');
  if (failed.length)
    out.push(`**Failed**: ${failed.map((r) => `${r.script} (${r.signal ?? `exit ${r.exitCode}`})`).join(', ')}.`, '');
  const malformed = results.flatMap((r) => r.malformed.map((l) => `${r.script}: ${l}`));
  if (malformed.length) out.push('Malformed BENCH lines:', '', ...malformed.map((l) => `    ${l}`), '');
  return out.join('\n');
};

const main = async () => {
  const options = parseOptions(process.argv.slice(2));
  if (options.jobs > 1 && !options.smoke) fail('--jobs is for smoke runs only: benchmarks run one at a time');
  const startedAt = new Date();
  const load = loadavg()[0]!;
  const underLoad = load > MAX_LOAD;
  if (underLoad && !options.allowLoad)
    fail(
      `the 1-minute load average is ${load.toFixed(2)}, above ${MAX_LOAD}: not starting (${UNDER_LOAD}). Wait for a quiet machine, or pass --allow-load for a smoke run.`,
    );
  if (underLoad) {
    const banner = `!!! --allow-load: the 1-minute load average is ${load.toFixed(2)} (above ${MAX_LOAD}) — ${UNDER_LOAD.toUpperCase()} !!!`;
    process.stdout.write(`${banner}\n`);
    log(banner);
  }
  const infra = await infraEnv();
  const env: NodeJS.ProcessEnv = { ...process.env, ...infra, ...(options.smoke ? { BENCH_SMOKE: '1' } : {}) };
  const machineLine = machine();
  process.stdout.write(`# npm run bench — ${machineLine}\n`);
  log(
    `${options.scripts.length} script(s)${options.smoke ? ', smoke run (tiny inputs)' : ''}: ${options.scripts.join(' ')}`,
  );

  // one script at a time; a smoke run may run `jobs` at once (its figures measure nothing); the table keeps the order named
  const runs = options.scripts.flatMap((script) =>
    (options.args ? [options.args] : options.smoke ? [SMOKE_ARGS[script] ?? []] : (FULL_RUNS[script] ?? [[]])).map(
      (args) => ({ script, args }),
    ),
  );
  const results: (ScriptResult | undefined)[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: options.jobs }, async () => {
      for (let i = next++; i < runs.length && !interrupted; i = next++) {
        const { script, args } = runs[i]!;
        results[i] = await runScript(script, args, env, options.timeoutSeconds, `(${i + 1}/${runs.length})`);
      }
    }),
  );

  const ran = results.filter((r): r is ScriptResult => r !== undefined);
  const text = markdownReport(ran, {
    machine: machineLine,
    command: `npm run bench -- ${process.argv.slice(2).join(' ')}`.trim(),
    startedAt,
    underLoad,
    smoke: options.smoke,
  });
  process.stdout.write(`\n${text}\n`);
  mkdirSync(dirname(options.out), { recursive: true });
  writeFileSync(options.out, `${text}\n`);
  const shown = relative(ROOT, options.out);
  log(`table written to ${shown.startsWith('..') ? options.out : shown}`);
  if (options.json) {
    mkdirSync(dirname(options.json), { recursive: true });
    writeFileSync(
      options.json,
      JSON.stringify({ machine: machineLine, underLoad, smoke: options.smoke, results: ran }, null, 2),
    );
  }
  process.exit(interrupted ? 130 : ran.every((r) => r.exitCode === 0) ? 0 : 1);
};

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await main();
