/**
 * Token refreshes per second: each worker walks its own rotation chain (every answer's refresh
 * token is the next request's), so every call is a real rotation: row lock, ES256 signature,
 * new row, sealed successor pair. Through HTTP (POST /v1/auth/refresh) and, to show the service
 * cost without the HTTP client sharing the cores, by calling refreshSession directly.
 * Aim: ≥ 1,500/s. Usage: source .test-infra/env; npx tsx bench/identity-refresh.ts [concurrency=16]
 */
import { refreshSession } from '../commands/identity/session';
import { KEYCLOAK_PER_VCPU, perCore, registerMany, seconds, startBenchPlatform } from './identity-support';
import { load, machine, progress, report, smokeOr, summarize } from './support';

const concurrency = Number(process.argv[2] ?? 16);
const p = await startBenchPlatform();
try {
  const users = await registerMany(p, concurrency);
  const chains = users.map((u) => u.refreshToken);
  progress('refresh', `${users.length} chains; ${concurrency} in flight for ${seconds()} s per scenario`);
  const viaHttp = async (w: number) => {
    const res = await p.api('/auth/refresh', { body: { refreshToken: chains[w]! } });
    if (res.status !== 200) throw new Error(`refresh answered ${res.status} ${JSON.stringify(res.body)}`);
    chains[w] = res.body.refreshToken;
  };
  const direct = async (w: number) => {
    chains[w] = (await refreshSession(p.kernel, chains[w]!)).refreshToken;
  };
  console.log(`identity token refreshes, ${concurrency} in flight, ${machine()}`);
  for (const [label, fn] of [
    ['HTTP POST /v1/auth/refresh', viaHttp],
    ['refreshSession() in process', direct],
  ] as const) {
    await load(concurrency, smokeOr(2, 0.5), fn);
    const run = await load(concurrency, seconds(), fn);
    const perSecond = run.calls / run.seconds;
    const { p50, p99 } = summarize(run.latencies);
    console.log(
      `  ${label.padEnd(28)} ${perSecond.toFixed(0).padStart(6)} refreshes/s, p50 ${p50.toFixed(1)} ms, p99 ${p99.toFixed(1)} ms; ${perCore(perSecond, KEYCLOAK_PER_VCPU.refreshes)}`,
    );
    report({
      path: `token refresh, ${label}, ${concurrency} in flight`,
      figure: perSecond,
      unit: '/s',
      aim: label.startsWith('HTTP') ? '≥ 2,000/s' : '',
    });
  }
} finally {
  await p.close();
}
