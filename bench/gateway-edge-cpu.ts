/**
 * CPU cost of the edge per request, without sockets: Fastify inject() of GET /v1/bench/ping
 * through the full platform app (ES256 token from the key ring's cache, permission, two-layer
 * rate limit, query validation, serialization, API-call audit) and through a bare Fastify app
 * with the same handler, alternating rounds; prints µs per request and the difference (median
 * of the rounds). Less sensitive to a busy machine than the HTTP benchmark, since no syscall is
 * timed. Usage: npx tsx bench/gateway-edge-cpu.ts [redis] [requests per round=20000] [rounds=4]
 */
import { loadavg } from 'node:os';
import Fastify from 'fastify';
import { loadConfig } from '../infra/config';
import { mergeServiceParts } from '../infra/services';
import { silentLogger } from '../infra/observability/logger';
import { startPlatform } from '../app/platform';
import { benchAuthenticator, benchRoutes, pingHandler } from './gateway-support';
import { benchDatabase, machine } from './support';

const redis = process.argv[2] === 'redis';
const n = Number(process.argv[3] ?? 20_000);
const rounds = Number(process.argv[4] ?? 4);
const { url, drop } = await benchDatabase();
const config = loadConfig({
  PORT: '0',
  PLATFORM_ENV: 'production',
  LOG_LEVEL: 'silent',
  DATABASE_URL: url,
  DATA_DIR: '/tmp/platform-bench',
  REDIS_URL: redis ? (process.env.TEST_REDIS_URL ?? '') : '',
  RATE_LIMIT_USER_PER_MIN: '100000000',
  RATE_LIMIT_TENANT_PER_MIN: '100000000',
});
const platform = await startPlatform({
  role: 'all',
  config,
  logger: silentLogger(),
  services: mergeServiceParts({ read: [benchRoutes] }),
  listen: false,
});
const { authenticator, token } = await benchAuthenticator();
platform.kernel.authenticator = authenticator;
const bare = Fastify();
bare.get('/v1/bench/ping', pingHandler);
await bare.ready();

type Injectable = { inject: (o: { url: string; headers: Record<string, string> }) => Promise<{ statusCode: number }> };
const request = { url: '/v1/bench/ping?n=5', headers: { authorization: `Bearer ${token}` } };
const perRequest = async (app: Injectable, count: number): Promise<number> => {
  const t = performance.now();
  for (let i = 0; i < count; i += 1) {
    const r = await app.inject(request);
    if (r.statusCode !== 200) throw new Error(`status ${r.statusCode}`);
  }
  return ((performance.now() - t) / count) * 1000;
};

console.log(
  `# gateway edge CPU per request (inject, no sockets) — ${machine()}; rate-limit store: ${redis ? 'Redis' : 'in-process'}; load average ${loadavg()[0]!.toFixed(2)}`,
);
try {
  await perRequest(bare, 3000);
  await perRequest(platform.app, 3000);
  const diffs: number[] = [];
  for (let r = 0; r < rounds; r += 1) {
    const b = await perRequest(bare, n);
    const g = await perRequest(platform.app, n);
    diffs.push(g - b);
    console.log(
      `  round ${r + 1}: bare ${b.toFixed(1)} µs/req, gateway ${g.toFixed(1)} µs/req, edge +${(g - b).toFixed(1)} µs`,
    );
  }
  const median = [...diffs].sort((a, b) => a - b)[Math.floor(diffs.length / 2)]!;
  console.log(
    `edge cost (median of ${rounds} rounds): +${median.toFixed(1)} µs per request; load average now ${loadavg()[0]!.toFixed(2)}`,
  );
} finally {
  await platform.stop();
  await drop();
}
