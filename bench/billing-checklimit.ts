/**
 * CheckLimit over gRPC at a fixed rate (spec 001: under a millisecond; issue 13 aim: p99 < 1 ms at
 * 5,000 calls/s). Open loop: calls are started on a schedule whatever the answers do, so a slow
 * answer shows as latency instead of lowering the rate. The client is @grpc/grpc-js with the
 * repo's .proto files (tests/support/billing.ts), in this process; the platform (role all) too.
 * Usage: source .test-infra/env; npx tsx bench/billing-checklimit.ts [calls/s=5000] [seconds=10] [tenants=100]
 */
import { billingGrpcClient } from '../tests/support/billing';
import { billingGrpcPort } from '../write-api/billing/serving';
import { billingPlatform, loadAverage, tenantsWithTrials } from './billing-support';
import { machine, progress, report, summarize } from './support';

const rate = Number(process.argv[2] ?? 5000);
const seconds = Number(process.argv[3] ?? 10);
const tenantCount = Number(process.argv[4] ?? 100);
const RESOURCES = [
  'RESOURCE_TYPE_USERS',
  'RESOURCE_TYPE_RECORDS',
  'RESOURCE_TYPE_STORAGE_BYTES',
  'RESOURCE_TYPE_MODULES',
];

const p = await billingPlatform();
try {
  const tenants = await tenantsWithTrials(p, tenantCount);
  const client = billingGrpcClient(`127.0.0.1:${billingGrpcPort(p.kernel)}`);
  const call = (i: number) =>
    client.call('CheckLimit', { tenant_id: tenants[i % tenants.length], resource: RESOURCES[i % RESOURCES.length] });
  progress('checklimit', `warming up ${tenants.length} tenants`);
  for (let i = 0; i < tenants.length * RESOURCES.length; i += 1) await call(i);
  progress('checklimit', `${rate} calls/s for ${seconds} s (load average ${await loadAverage()})`);
  const latencies: number[] = [];
  let failed = 0;
  const total = Math.round(rate * seconds);
  const started = performance.now();
  const inFlight: Promise<void>[] = [];
  for (let i = 0; i < total; i += 1) {
    const due = started + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    const t = performance.now();
    inFlight.push(
      call(i).then(
        () => {
          latencies.push(performance.now() - t);
        },
        () => {
          failed += 1;
        },
      ),
    );
    if (inFlight.length > 10_000) await Promise.all(inFlight.splice(0, 5_000));
  }
  await Promise.all(inFlight);
  const elapsed = (performance.now() - started) / 1000;
  const s = summarize(latencies);
  console.log(machine());
  console.log(
    `CheckLimit over gRPC (plaintext, loopback), open loop at ${rate}/s for ${seconds} s over ${tenants.length} tenants × ${RESOURCES.length} resources`,
  );
  console.log(
    `  achieved ${(s.n / elapsed).toFixed(0)} calls/s, failed ${failed}; p50 ${s.p50.toFixed(3)} ms, p99 ${s.p99.toFixed(3)} ms (aim p99 < 1 ms); load average after: ${await loadAverage()}`,
  );
  report({
    path: `CheckLimit over gRPC at ${rate.toLocaleString('en')}/s, p99 (client in the same process)`,
    figure: s.p99,
    unit: 'ms',
    aim: '< 1 ms',
  });
  report({ path: 'CheckLimit over gRPC, achieved', figure: s.n / elapsed, unit: 'calls/s', aim: '' });
  client.close();
} finally {
  await p.close();
}
