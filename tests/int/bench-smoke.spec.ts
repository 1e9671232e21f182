import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import type { ScriptResult } from '../../bench/run';
import { benchScripts, FULL_RUNS, REPORTING, SMOKE_ARGS } from '../../bench/run';

/**
 * `npm run bench` (bench/run.ts) on tiny inputs: benchmarks are not timed tests, so nothing here
 * measures anything — it checks that the scripts still run and that the ones issue 25's table
 * takes its rows from report their figures (`report()` of bench/support.ts, `BENCH {json}` lines).
 * In project int: the scripts use fresh databases, their own topics and Redis keys, and stop no
 * shared server.
 *
 * Which scripts: all 28 scripts of bench/ smoke-run in about 3 minutes on this loaded 2-core
 * machine (2–16 s each: platform start, migrations of a fresh database, a second of load; measured
 * 2026-11-27 at load 4–5) — too long for `npm test`. So this runs the 13 that report the figures of
 * issue 25's table (REPORTING of bench/run.ts) and jwt-verify, one that prints human lines only,
 * two at a time (--jobs=2: mostly waiting on starts, they halve the wall time: 89–97 s one at a
 * time, 47–77 s two at a time, load 5–5.6). Left out here, checked by hand with `npm run bench -- --smoke
 * --allow-load`: access-epoch, audit-export, audit-latest, billing-gateway-check, billing-webhooks,
 * files-thumbnail, files-upload-memory, gateway-edge-cpu, identity-logins, identity-verify,
 * money-history, notify-accept, notify-email, passwords.
 */
const SUBSET = [...REPORTING, 'jwt-verify'];
/** the scripts whose peer runs in a smoke run, and how their figures name it */
const PEERS: Record<string, RegExp> = {
  eventstore: /^pgbench \d/,
  'money-transfers': /^pgledger [0-9a-f]{7} under pgbench/,
  'audit-ingest': /^raw chdb INSERT/,
  'files-upload': /^clamd INSTREAM alone/,
  'gateway-overhead': /^bare Fastify/,
};
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'bench-smoke-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const runBench = (args: string[], env: Record<string, string> = {}) =>
  new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'bench/run.ts', ...args], {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });

describe('npm run bench', () => {
  it('knows the smoke arguments of every benchmark script, and each script of the issue 25 table exists', () => {
    const scripts = benchScripts();
    expect(scripts.filter((s) => !(s in SMOKE_ARGS))).toEqual([]);
    expect(Object.keys(SMOKE_ARGS).filter((s) => !scripts.includes(s))).toEqual([]);
    expect(REPORTING.filter((s) => !scripts.includes(s))).toEqual([]);
    expect(Object.keys(FULL_RUNS).filter((s) => !scripts.includes(s))).toEqual([]);
    for (const s of SUBSET) expect(scripts).toContain(s);
  });

  it('refuses to start above the load limit, naming the load', async () => {
    // BENCH_MAX_LOAD moves the limit (1.5) below any load, so that the refusal shows on any machine
    const r = await runBench(['jwt-verify', `--out=${join(dir, 'refused.md')}`], { BENCH_MAX_LOAD: '-1' });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/the 1-minute load average is \d+\.\d\d, above -1: not starting/);
    expect(r.stderr).toContain('--allow-load');
    expect(r.stdout).toBe('');
  });

  it('smoke-runs a subset of the scripts: each exits 0, each that reports figures reports one above 0', async () => {
    const out = join(dir, 'smoke.md');
    const json = join(dir, 'smoke.json');
    const started = performance.now();
    const r = await runBench(['--smoke', '--allow-load', '--jobs=2', `--out=${out}`, `--json=${json}`, ...SUBSET]);
    const seconds = (performance.now() - started) / 1000;
    const detail = `${r.stdout}\n${r.stderr}`;
    expect(r.code, detail).toBe(0);
    const { results } = JSON.parse(readFileSync(json, 'utf8')) as { results: ScriptResult[] };
    expect(results.map((s) => s.script)).toEqual(SUBSET);
    for (const s of results) {
      expect(s.exitCode, `${s.script}\n${detail}`).toBe(0);
      expect(s.malformed, s.script).toEqual([]);
      if (REPORTING.includes(s.script)) {
        expect(s.figures.length, `${s.script} reported no figure`).toBeGreaterThan(0);
        expect(
          s.figures.every((f) => Number.isFinite(f.figure)),
          JSON.stringify(s.figures),
        ).toBe(true);
        expect(Math.max(...s.figures.map((f) => f.figure)), s.script).toBeGreaterThan(0);
      } else expect(s.figures).toEqual([]);
    }
    // the peers of the same run (BENCHMARKS.md, "Peers in the same run"): each runs on the tiny inputs too, and
    // reports its figure beside ours; PocketBase's build takes minutes, so a smoke run skips it and says so
    const peerOf = (script: string) => results.find((s) => s.script === script)!.figures;
    for (const [script, peer] of Object.entries(PEERS)) {
      const withPeer = peerOf(script).filter((f) => peer.test(f.peer ?? '') && f.peerFigure !== undefined);
      expect(withPeer.length, `${script}: no figure of its peer ${peer}`).toBeGreaterThan(0);
      expect(
        withPeer.every((f) => f.peerFigure! > 0),
        JSON.stringify(withPeer),
      ).toBe(true);
    }
    expect(peerOf('data-crud').map((f) => f.peer)).toContain('PocketBase: skipped in a smoke run');
    // the table: stdout and the file, the machine line, and the warning of a run under load when there was load
    const table = readFileSync(out, 'utf8');
    expect(table).toContain('| path | figure | aim | peer in the same run | ratio | load at start |');
    expect(table).toMatch(/\| single-event appends in a transaction, 8 writers \(eventstore\) \| [\d,.]+ events\/s \|/);
    expect(table).toMatch(
      /\(eventstore\) \| [\d,.]+ ms \| within 20 % of the peer \| stream of 10 events: [\d,.]+ ms \| [\d.]+× \|/,
    );
    expect(table).toContain('No figures reported (human lines only): jwt-verify.');
    expect(table).toContain('Smoke run');
    expect(r.stdout).toContain(table.trim());
    expect(r.stdout).toMatch(/^# npm run bench — \d+ cores/m);
    if (/--allow-load: the 1-minute load average/.test(r.stdout))
      expect(table).toContain('figures taken under load are not figures');
    process.stdout.write(`[bench-smoke] ${SUBSET.length} scripts in ${seconds.toFixed(1)} s\n`);
  }, 300_000);
});
