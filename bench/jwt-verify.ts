/**
 * Cost of KeyRing.verify (ES256 signature + claim checks), the work the gateway does on every
 * authenticated request: cold (cache off: every call checks the signature) and warm (the
 * verified-token cache answers a token seen before, as when a client reuses its access token).
 * Usage: npx tsx bench/jwt-verify.ts [iterations=20000]
 */
import { KeyRing } from '../infra/security/jwt';

const iterations = Number(process.argv[2] ?? 20_000);
const options = { issuer: 'https://id.bench', audience: 'platform', maxTokenLifetimeSeconds: 3600 };

const measure = async (ring: KeyRing, tokens: string[], concurrency: number): Promise<number> => {
  const start = process.hrtime.bigint();
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < iterations) await ring.verify(tokens[next++ % tokens.length]!);
    }),
  );
  return Number(process.hrtime.bigint() - start) / 1000 / iterations;
};

const scenario = async (label: string, verifiedTokenCacheSize: number): Promise<void> => {
  const ring = await KeyRing.generate({ ...options, verifiedTokenCacheSize });
  await ring.rotate(); // two keys in the ring, as during a rotation
  const tokens = await Promise.all(
    Array.from({ length: 100 }, (_, i) =>
      ring.sign(
        { sub: `user-${i}`, email: `user${i}@example.com`, tenantId: `tenant-${i % 7}`, roles: ['Member', 'Billing'] },
        { expiresInSeconds: 900 },
      ),
    ),
  );
  await measure(ring, tokens, 1); // warm-up: JIT, WebCrypto, and the cache when it is on
  const sequential = await measure(ring, tokens, 1);
  const concurrent = await measure(ring, tokens, 32);
  console.log(
    `  ${label.padEnd(34)} ${sequential.toFixed(1).padStart(7)} µs/op sequential, ${concurrent.toFixed(1).padStart(7)} µs/op with 32 in flight`,
  );
};

console.log(`KeyRing.verify, ${iterations} verifications over 100 distinct tokens, node ${process.version}`);
await scenario('cold (cache off, signature checked)', 0);
await scenario('warm (verified-token cache hit)', 10_000);
