/**
 * Authenticated GET of a small read model in the all-in-one process (issue 5): autocannon on
 * the same machine against GET /v1/tally/counters/:id (ES256 bearer token, permission, two-layer
 * rate limit, validation, one PostgreSQL read), reporting req/s, latency and the CPU share the
 * load generator itself took. Limits are raised so one benchmark user is not refused.
 * `ping` as fourth argument targets GET /v1/bench/ping instead (the same edge, no database), to
 * separate the edge's own ceiling from PostgreSQL's.
 * Usage: npx tsx bench/gateway-throughput.ts [connections=64] [seconds=15] [redis=0|1] [ping]
 */
import { cpus, loadavg } from 'node:os';
import { loadConfig } from '../infra/config';
import { silentLogger } from '../infra/observability/logger';
import { startPlatform } from '../app/platform';
import { tallyServices } from '../tests/support/platform';
import { mergeServiceParts } from '../infra/services';
import { benchAuthenticator, benchRoutes, KONG, run } from './gateway-support';
import { benchDatabase, machine, report, smokeOr } from './support';

const connections = Number(process.argv[2] ?? 64);
const seconds = Number(process.argv[3] ?? 15);
const useRedis = process.argv[4] === '1';
const ping = process.argv[5] === 'ping';
const { url: databaseUrl, drop } = await benchDatabase();

const config = loadConfig({
  PORT: '0',
  PLATFORM_ENV: 'production',
  LOG_LEVEL: 'silent',
  DATABASE_URL: databaseUrl,
  DATA_DIR: '/tmp/platform-bench',
  REDIS_URL: useRedis ? (process.env.TEST_REDIS_URL ?? '') : '',
  RATE_LIMIT_USER_PER_MIN: '100000000',
  RATE_LIMIT_TENANT_PER_MIN: '100000000',
});
const platform = await startPlatform({
  role: 'all',
  config,
  logger: silentLogger(),
  services: mergeServiceParts(tallyServices, { read: [benchRoutes] }),
});
const { authenticator, token } = await benchAuthenticator();
platform.kernel.authenticator = authenticator;
const url = `http://127.0.0.1:${(platform.app.server.address() as { port: number }).port}`;
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
  `# authenticated GET of ${ping ? 'a route without I/O (/v1/bench/ping)' : 'a read model (/v1/tally/counters/:id)'}, all-in-one — ${machine()}; rate-limit store: ${config.REDIS_URL ? 'Redis' : 'in-process'}; ${connections} connections, ${seconds} s; load average ${loadavg()[0]!.toFixed(2)}`,
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
  const serverCpu = (server.user + server.system) / 1e6;
  console.log(
    `  ${Math.round(r.requests.total / seconds)} req/s (${r.requests.total} requests, ${r.non2xx} non-2xx, ${r.errors} errors)  latency p50 ${r.latency.p50} ms  p99 ${r.latency.p99} ms  avg ${r.latency.average} ms`,
  );
  console.log(
    `  CPU over ${wall.toFixed(1)} s on ${cpus().length} cores: platform process ${((100 * serverCpu) / wall).toFixed(0)} % of one core, autocannon ${((100 * cpuSeconds) / wall).toFixed(0)} % of one core (${((100 * cpuSeconds) / (serverCpu + cpuSeconds)).toFixed(0)} % of the CPU both used)`,
  );
  console.log(`  (aim ≥ 8,000 req/s on 2 cores)`);
  report({
    path: `authenticated GET of ${ping ? 'a route without I/O' : 'a read model'}, ${connections} connections (${config.REDIS_URL ? 'Redis' : 'in-process'} limits)`,
    figure: r.requests.total / seconds,
    unit: 'rps',
    aim: ping ? '' : '≥ 15,000 rps',
  });
  report({ path: 'authenticated GET, p99', figure: r.latency.p99, unit: 'ms', aim: '' });
  console.log(KONG);
} finally {
  await platform.stop();
  await drop();
}
