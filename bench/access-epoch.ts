/**
 * What the access epochs cost (commands/identity/runtime.ts, infra/cache/epochs.ts): every
 * authenticated request reads the user's and the tenant's epoch (one MGET) before it may serve its
 * cached access. Measured one call at a time and with 32 in flight:
 * - the epoch read alone, against Redis (REDIS_URL of scripts/test-infra.sh) and the in-process cache;
 * - a warm authenticate (verified-token cache and access cache hit) with each cache, so the
 *   difference is what the epoch costs a request.
 * Usage: source .test-infra/env; npx tsx bench/access-epoch.ts [iterations=20000]
 */
import { randomBytes } from 'node:crypto';
import { CacheEpochs } from '../infra/cache/epochs';
import { createMemoryCache } from '../infra/cache/memory';
import { openRedisCache } from '../infra/cache/redis';
import type { IdentityPlatform } from '../tests/support/identity';
import { registerUser, startIdentityPlatform } from '../tests/support/identity';
import { machine, progress } from './support';

const iterations = Number(process.argv[2] ?? 20_000);
const redisUrl = process.env.TEST_REDIS_URL ?? process.env.REDIS_URL;
if (!redisUrl) throw new Error('TEST_REDIS_URL is not set: source .test-infra/env first');

/** µs per call, one at a time and with `inFlight` calls in flight */
const measure = async (n: number, inFlight: number, call: (i: number) => Promise<unknown>): Promise<number> => {
  let next = 0;
  const started = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      for (let i = next++; i < n; i = next++) await call(i);
    }),
  );
  return Number(process.hrtime.bigint() - started) / 1000 / n;
};

const row = (label: string, one: number, many: number) =>
  console.log(
    `  ${label.padEnd(44)} ${one.toFixed(1).padStart(8)} µs/call one at a time ${many.toFixed(1).padStart(8)} µs/call with 32 in flight`,
  );

const epochReads = async (label: string, epochs: CacheEpochs) => {
  const scopes = Array.from({ length: 100 }, (_, i) => [`u:user-${i}`, `t:tenant-${i % 10}`]);
  await measure(2000, 1, (i) => epochs.current(scopes[i % scopes.length]!)); // warm-up, and every epoch exists
  row(
    label,
    await measure(iterations, 1, (i) => epochs.current(scopes[i % scopes.length]!)),
    await measure(iterations, 32, (i) => epochs.current(scopes[i % scopes.length]!)),
  );
};

const warmAuthenticate = async (label: string, env: Record<string, string>) => {
  const p: IdentityPlatform = await startIdentityPlatform({ env });
  try {
    const users = await Promise.all(Array.from({ length: 20 }, () => registerUser(p)));
    const tokens = users.map((u) => u.accessToken);
    const auth = p.kernel.authenticator;
    await measure(2000, 1, (i) => auth.authenticate(tokens[i % tokens.length]!));
    row(
      label,
      await measure(iterations, 1, (i) => auth.authenticate(tokens[i % tokens.length]!)),
      await measure(iterations, 32, (i) => auth.authenticate(tokens[i % tokens.length]!)),
    );
  } finally {
    await p.close();
  }
};

const prefix = `bench-epoch-${randomBytes(4).toString('hex')}:`;
const redis = await openRedisCache({ url: redisUrl, keyPrefix: prefix });
try {
  console.log(`access epochs, ${iterations} calls per line, ${machine()}`);
  progress('epochs', 'epoch reads');
  await epochReads('epoch read (MGET of 2 keys), Redis', new CacheEpochs(redis, 'access'));
  await epochReads('epoch read, in-process cache', new CacheEpochs(createMemoryCache(), 'access'));
  progress('epochs', 'warm authenticate, Redis');
  await warmAuthenticate('warm authenticate, epochs in Redis', { REDIS_URL: redisUrl, REDIS_KEY_PREFIX: prefix });
  progress('epochs', 'warm authenticate, in-process cache');
  await warmAuthenticate('warm authenticate, epochs in-process', {});
} finally {
  await redis.close();
}
