/**
 * Cost per request of authenticating an access token and resolving the principal's permissions,
 * through the kernel authenticator the identity service installs (projections/identity/shared/runtime.ts):
 * - warm: a token seen before (verified-token cache hit) of a user whose access is cached (5 s);
 * - cold token: a token never seen (ES256 signature checked) of a user whose access is cached;
 * - cold token and access: the signature and the access query (roles, permissions) every time.
 * Aim: < 50 µs. Usage: source .test-infra/env; npx tsx bench/identity-verify.ts [iterations=20000]
 */
import { LIFETIMES } from '../domain/identity/constants';
import { identityRuntime as identity } from '../projections/identity/shared/runtime';
import { registerMany, startBenchPlatform } from './identity-support';
import { machine, progress } from './support';

const iterations = Number(process.argv[2] ?? 20_000);
const p = await startBenchPlatform();
try {
  const users = await registerMany(p, 20);
  const rt = identity(p.kernel);
  const auth = p.kernel.authenticator;
  // distinct tokens: the lifetime varies, so no two strings are equal (each is a cache miss once)
  const fresh: string[] = [];
  for (let i = 0; fresh.length < iterations * 2 + 2000; i += 1) {
    const u = users[i % users.length]!;
    fresh.push(
      await rt.ring.sign(
        { sub: u.userId, email: u.email, tenantId: u.tenantId, roles: ['Owner'] },
        { expiresInSeconds: LIFETIMES.accessTokenSeconds - 1 - (Math.floor(i / users.length) % 600) },
      ),
    );
  }
  progress('verify', `${fresh.length} distinct tokens signed`);
  const hot = users.map((u) => u.accessToken);
  const measure = async (n: number, next: (i: number) => string, before?: () => void): Promise<number> => {
    let spent = 0n;
    for (let i = 0; i < n; i += 1) {
      before?.();
      const t = process.hrtime.bigint();
      await auth.authenticate(next(i));
      spent += process.hrtime.bigint() - t;
    }
    return Number(spent) / 1000 / n;
  };
  let cursor = 0;
  await measure(2000, (i) => hot[i % hot.length]!); // warm-up: JIT, caches
  await measure(1000, () => fresh[cursor++]!);
  const warm = await measure(iterations, (i) => hot[i % hot.length]!);
  const coldToken = await measure(iterations, () => fresh[cursor++]!);
  const coldBoth = await measure(
    Math.min(iterations, 5000),
    () => fresh[cursor++]!,
    () => rt.invalidate(),
  );
  console.log(`identity authenticate (verify + permissions), ${iterations} calls, one at a time, ${machine()}`);
  console.log(`  warm (token cache + access cache hit)      ${warm.toFixed(1).padStart(8)} µs/request`);
  console.log(`  cold token (ES256 verify), access cached    ${coldToken.toFixed(1).padStart(8)} µs/request`);
  console.log(`  cold token and access (verify + DB query)   ${coldBoth.toFixed(1).padStart(8)} µs/request`);
} finally {
  await p.close();
}
