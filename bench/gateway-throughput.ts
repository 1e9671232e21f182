/**
 * Authenticated GET of a small read model in the all-in-one process (issue 5): autocannon on
 * the same machine against GET /v1/tally/counters/:id (ES256 bearer token, permission, two-layer
 * rate limit, validation, one PostgreSQL read), reporting req/s, latency and the CPU share the
 * load generator itself took. Limits are raised so one benchmark user is not refused.
 * `ping` as fourth argument targets GET /v1/bench/ping instead (the same edge, no database), to
 * separate the edge's own ceiling from PostgreSQL's.
 * `workers=N` anywhere among the arguments serves through N HTTP workers (node:cluster, as
 * `npm start` with HTTP_WORKERS=N: the primary runs the background part and, without Redis, the
 * workers' shared cache over IPC); the default, 1, is the one process of before.
 * Usage: npx tsx bench/gateway-throughput.ts [connections=64] [seconds=15] [redis=0|1] [ping] [workers=N]
 */
import cluster from 'node:cluster';
import { readFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import type { HttpCluster } from '../infra/cluster/primary';
import { startHttpCluster } from '../infra/cluster/primary';
import { joinCluster } from '../infra/cluster/worker';
import { loadConfig } from '../infra/config';
import { silentLogger } from '../infra/observability/logger';
import { startPlatform } from '../app/platform';
import { tallyServices } from '../tests/support/platform';
import { mergeServiceParts } from '../infra/services';
import { benchAuthenticator, benchRoutes, KONG, run } from './gateway-support';
import { benchDatabase, machine, report, smokeOr } from './support';

const args = process.argv.slice(2).filter((a) => !a.startsWith('workers='));
const workers = Number(process.argv.find((a) => a.startsWith('workers='))?.slice('workers='.length) ?? 1);
const connections = Number(args[0] ?? 64);
const seconds = Number(args[1] ?? 15);
const useRedis = args[2] === '1';
const ping = args[3] === 'ping';
const services = mergeServiceParts(tallyServices, { read: [benchRoutes] });
const benchConfig = (databaseUrl: string) =>
  loadConfig({
    PORT: '0',
    PLATFORM_ENV: 'production',
    LOG_LEVEL: 'silent',
    DATABASE_URL: databaseUrl,
    DATA_DIR: '/tmp/platform-bench',
    REDIS_URL: useRedis ? (process.env.TEST_REDIS_URL ?? '') : '',
    RATE_LIMIT_USER_PER_MIN: '100000000',
    RATE_LIMIT_TENANT_PER_MIN: '100000000',
    HTTP_WORKERS: String(workers),
  });

if (cluster.isWorker) {
  // an HTTP worker: the HTTP part of role all on the primary's database, the primary's token ring
  const platform = await startPlatform({
    role: 'all',
    part: 'http',
    config: benchConfig(process.env.BENCH_DATABASE_URL!),
    logger: silentLogger(),
    services,
  });
  platform.kernel.authenticator = (await benchAuthenticator(process.env.BENCH_KEYRING)).authenticator;
  process.send?.({ kind: 'bench.url', url: platform.url });
  joinCluster({
    primaryReady: (ready) => (platform.kernel.readiness.primary = ready),
    shutdown: () => void platform.stop().then(() => process.exit(0)),
    primaryGone: () => process.exit(1),
  }).serving();
} else {
  await runBench();
}

/** CPU seconds a process used so far (/proc: utime + stime, in clock ticks of 1/100 s) */
function cpuSecondsOfPid(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8')
    .replace(/^.*\) /s, '')
    .split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

async function runBench(): Promise<void> {
  const { url: databaseUrl, drop } = await benchDatabase();
  const config = benchConfig(databaseUrl);
  const { authenticator, token, shared } = await benchAuthenticator();
  let httpCluster: HttpCluster | null = null;
  const platform = await startPlatform({
    role: 'all',
    config,
    logger: silentLogger(),
    services,
    ...(workers > 1 ? { part: 'background' as const, listen: false } : {}),
  });
  let url = '';
  if (workers > 1) {
    const first = new Promise<string>((resolve) =>
      cluster.on('message', (_worker, message: { kind?: string; url?: string }) => {
        if (message.kind === 'bench.url' && message.url) resolve(message.url);
      }),
    );
    httpCluster = startHttpCluster({
      workers,
      logger: silentLogger(),
      env: { BENCH_DATABASE_URL: databaseUrl, BENCH_KEYRING: shared },
      cache: config.REDIS_URL ? null : platform.kernel.engines.cache,
      graceMs: 10_000,
      onFailure: (code) => process.exit(code),
    });
    await httpCluster.ready;
    url = await first;
  } else {
    platform.kernel.authenticator = authenticator;
    url = `http://127.0.0.1:${(platform.app.server.address() as { port: number }).port}`;
  }
  const auth = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  for (let i = 0; i < 5; i += 1) {
    const res = await fetch(`${url}/v1/tally/counters`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ id: `c${i}`, name: `counter ${i}` }),
    });
    if (res.status !== 201) throw new Error(`seeding failed: ${res.status} ${await res.text()}`);
  }

  console.log(
    `# authenticated GET of ${ping ? 'a route without I/O (/v1/bench/ping)' : 'a read model (/v1/tally/counters/:id)'}, all-in-one, ${workers} HTTP worker${workers > 1 ? 's' : ''} — ${machine()}; rate-limit store: ${config.REDIS_URL ? 'Redis' : 'in-process'}; ${connections} connections, ${seconds} s; load average ${loadavg()[0]!.toFixed(2)}`,
  );
  try {
    const autocannon = (s: number) =>
      run(process.execPath, [
        'node_modules/autocannon/autocannon.js',
        '-c',
        String(connections),
        '-d',
        String(s),
        '-H',
        `authorization=Bearer ${token}`,
        '--json',
        ping ? `${url}/v1/bench/ping?n=5` : `${url}/v1/tally/counters/c1`,
      ]);
    await autocannon(smokeOr(3, 1)); // warm-up
    const workerPids = httpCluster?.pids() ?? [];
    const workersCpu0 = workerPids.reduce((sum, pid) => sum + cpuSecondsOfPid(pid), 0);
    const serverCpu0 = process.cpuUsage();
    const t0 = performance.now();
    const { stdout, cpuSeconds } = await autocannon(seconds);
    const wall = (performance.now() - t0) / 1000;
    const server = process.cpuUsage(serverCpu0);
    const r = JSON.parse(stdout) as {
      requests: { average: number; total: number };
      latency: { p50: number; p99: number; average: number };
      non2xx: number;
      errors: number;
    };
    const workersCpu = workerPids.reduce((sum, pid) => sum + cpuSecondsOfPid(pid), 0) - workersCpu0;
    // the primary and every worker: the platform's CPU
    const serverCpu = (server.user + server.system) / 1e6 + workersCpu;
    console.log(
      `  ${Math.round(r.requests.total / seconds)} req/s (${r.requests.total} requests, ${r.non2xx} non-2xx, ${r.errors} errors)  latency p50 ${r.latency.p50} ms  p99 ${r.latency.p99} ms  avg ${r.latency.average} ms`,
    );
    console.log(
      `  CPU over ${wall.toFixed(1)} s on ${cpus().length} cores: platform process${workers > 1 ? `es (primary + ${workers} workers)` : ''} ${((100 * serverCpu) / wall).toFixed(0)} % of one core, autocannon ${((100 * cpuSeconds) / wall).toFixed(0)} % of one core (${((100 * cpuSeconds) / (serverCpu + cpuSeconds)).toFixed(0)} % of the CPU both used)`,
    );
    console.log(`  (aim ≥ 8,000 req/s on 2 cores)`);
    report({
      path: `authenticated GET of ${ping ? 'a route without I/O' : 'a read model'}, ${connections} connections (${config.REDIS_URL ? 'Redis' : 'in-process'} limits${workers > 1 ? `, ${workers} HTTP workers` : ''})`,
      figure: r.requests.total / seconds,
      unit: 'rps',
      aim: ping ? '' : '≥ 15,000 rps',
    });
    report({ path: 'authenticated GET, p99', figure: r.latency.p99, unit: 'ms', aim: '' });
    console.log(KONG);
  } finally {
    await httpCluster?.stop();
    await platform.stop();
    await drop();
  }
}
