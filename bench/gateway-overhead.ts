/**
 * Gateway overhead (issue 5): latency the edge adds per request (authentication with an ES256
 * token, permission check, two-layer rate limit, query validation, response serialization, audit
 * recording) over the same handler served by a bare Fastify app, in the same run, at a fixed
 * 2,000 requests/s from a separate load process. Phases alternate bare / gateway to share the
 * machine's noise. Redis (TEST_REDIS_URL) backs the global rate-limit layer when it is set.
 * Usage: npx tsx bench/gateway-overhead.ts [rate=2000] [seconds=10] [rounds=2]
 */
import { loadavg } from 'node:os';
import Fastify from 'fastify';
import { loadConfig } from '../infra/config';
import { mergeServiceParts } from '../infra/services';
import { silentLogger } from '../infra/observability/logger';
import { startPlatform } from '../app/platform';
import { benchAuthenticator, benchRoutes, KONG, pingHandler, run } from './gateway-support';
import { benchDatabase, machine, report, smokeOr } from './support';

const rate = Number(process.argv[2] ?? 2000);
const seconds = Number(process.argv[3] ?? 10);
const rounds = Number(process.argv[4] ?? 2);
const { url: databaseUrl, drop } = await benchDatabase();

const config = loadConfig({
  PORT: '0',
  PLATFORM_ENV: 'production',
  LOG_LEVEL: 'silent',
  DATABASE_URL: databaseUrl,
  DATA_DIR: '/tmp/platform-bench',
  REDIS_URL: process.env.TEST_REDIS_URL ?? '',
  RATE_LIMIT_USER_PER_MIN: '100000000',
  RATE_LIMIT_TENANT_PER_MIN: '100000000',
});
const platform = await startPlatform({
  role: 'all',
  config,
  logger: silentLogger(),
  services: mergeServiceParts({ read: [benchRoutes] }),
});
const { authenticator, token } = await benchAuthenticator();
platform.kernel.authenticator = authenticator;
const gatewayPort = (platform.app.server.address() as { port: number }).port;

const bare = Fastify();
bare.get('/v1/bench/ping', pingHandler);
await bare.listen({ port: 0, host: '127.0.0.1' });
const barePort = (bare.server.address() as { port: number }).port;

const headers = { authorization: `Bearer ${token}` };
const phase = (name: string, port: number, s: number) => ({
  name,
  url: `http://127.0.0.1:${port}/v1/bench/ping?n=5`,
  seconds: s,
  rate,
  headers,
});
const warmup = smokeOr(3, 1);
const phases = [phase('warmup-bare', barePort, warmup), phase('warmup-gateway', gatewayPort, warmup)];
for (let r = 0; r < rounds; r += 1)
  phases.push(phase('bare', barePort, seconds), phase('gateway', gatewayPort, seconds));

console.log(
  `# gateway overhead at ${rate} req/s — ${machine()}; rate-limit store: ${config.REDIS_URL ? 'Redis' : 'in-process'}; load average ${loadavg()[0]!.toFixed(2)}`,
);
try {
  const { stdout } = await run(process.execPath, [
    '--import',
    'tsx',
    'bench/gateway-load-client.ts',
    JSON.stringify(phases),
  ]);
  const results = stdout
    .trim()
    .split('\n')
    .map(
      (l) =>
        JSON.parse(l) as {
          name: string;
          n: number;
          rps: number;
          p50: number;
          p90: number;
          p99: number;
          max: number;
          statuses: Record<string, number>;
        },
    );
  const merged = (name: string) => {
    const rs = results.filter((r) => r.name === name);
    return {
      n: rs.reduce((a, r) => a + r.n, 0),
      p50: Math.max(...rs.map((r) => r.p50)),
      p99: Math.max(...rs.map((r) => r.p99)),
      statuses: rs.map((r) => JSON.stringify(r.statuses)).join(' '),
    };
  };
  for (const r of results)
    console.log(
      `  ${r.name.padEnd(15)} n=${r.n} ${r.rps} req/s  p50 ${r.p50.toFixed(3)} ms  p90 ${r.p90.toFixed(3)} ms  p99 ${r.p99.toFixed(3)} ms  max ${r.max.toFixed(1)} ms  ${JSON.stringify(r.statuses)}`,
    );
  const b = merged('bare');
  const g = merged('gateway');
  console.log(
    `added by the gateway (worst round): p50 +${(g.p50 - b.p50).toFixed(3)} ms, p99 +${(g.p99 - b.p99).toFixed(3)} ms (aim < 0.5 ms at p99)`,
  );
  report({
    path: `gateway p99 at ${rate.toLocaleString('en')} rps (worst round)`,
    figure: g.p99,
    unit: 'ms',
    aim: '< peer + 0.5 ms',
    peer: 'bare Fastify, same handler',
    peerFigure: b.p99,
  });
  report({ path: 'gateway overhead, p99 added', figure: g.p99 - b.p99, unit: 'ms', aim: '< +0.5 ms' });
  report({ path: 'gateway overhead, p50 added', figure: g.p50 - b.p50, unit: 'ms', aim: '' });
  console.log(KONG);
} finally {
  await bare.close();
  await platform.stop();
  await drop();
}
