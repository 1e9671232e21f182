/**
 * Password logins per second at the OWASP argon2id setting (19 MiB, t=2, p=1) through HTTP:
 * POST /v1/auth/login → argon2id verify, access resolution, ES256 token, refresh-token row and the
 * auth.user.logged_in event. Aim: ≥ 50/s with p99 < 150 ms on 2 cores.
 * Usage: source .test-infra/env; npx tsx bench/identity-logins.ts [concurrency=4]
 * (the client runs in the same process and shares the cores)
 */
import { hashPassword, verifyPassword } from '../infra/security/passwords';
import { PASSWORD } from '../tests/support/identity';
import { KEYCLOAK_PER_VCPU, perCore, registerMany, seconds, startBenchPlatform } from './identity-support';
import { load, machine, progress, smokeOr, summarize } from './support';

const concurrency = Number(process.argv[2] ?? 4);

/** the ceiling: argon2id verifications alone (libuv threads), no HTTP, no database */
const argon2Ceiling = async (inFlight: number): Promise<number> => {
  const hash = await hashPassword(PASSWORD);
  const run = await load(inFlight, smokeOr(3, 0.5), async () => {
    await verifyPassword(hash, PASSWORD);
  });
  return run.calls / run.seconds;
};
const p = await startBenchPlatform();
try {
  const users = await registerMany(p, 16);
  progress('logins', `${users.length} users registered; ${concurrency} concurrent logins for ${seconds()} s`);
  const login = async (w: number, i: number) => {
    const user = users[(w * 7 + i) % users.length]!;
    const res = await p.api('/auth/login', { body: { email: user.email, password: PASSWORD } });
    if (res.status !== 200) throw new Error(`login answered ${res.status}`);
  };
  await load(concurrency, smokeOr(2, 0.5), login); // warm-up
  const run = await load(concurrency, seconds(), login);
  const perSecond = run.calls / run.seconds;
  const { p50, p99 } = summarize(run.latencies);
  console.log(`identity password logins (argon2id m=19456 KiB t=2 p=1), ${concurrency} in flight, ${machine()}`);
  console.log(
    `  ${perSecond.toFixed(1)} logins/s, p50 ${p50.toFixed(1)} ms, p99 ${p99.toFixed(1)} ms over ${run.calls} logins`,
  );
  console.log(`  ${perCore(perSecond, KEYCLOAK_PER_VCPU.logins)}`);
  console.log(
    `  ceiling: argon2id verify alone ${(await argon2Ceiling(2)).toFixed(1)}/s with 2 in flight, ${(await argon2Ceiling(concurrency)).toFixed(1)}/s with ${concurrency}`,
  );
} finally {
  await p.close();
}
