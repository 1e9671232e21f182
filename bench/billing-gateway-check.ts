/**
 * The gateway's billing check per request when its caches are warm (issue 13 aim: < 20 µs): the
 * admission of a counted mutation (plan_info for the status rules, then limit:{tenant}:{resource})
 * and of a plain GET, called as the edge calls it, one at a time, in process (no sockets).
 * Usage: source .test-infra/env; npx tsx bench/billing-gateway-check.ts [iterations=200000] [tenants=1000]
 */
import { billingAdmission } from '../write-api/billing/serving';
import { billingPlatform, loadAverage, tenantsWithTrials } from './billing-support';
import { machine, progress } from './support';

const iterations = Number(process.argv[2] ?? 200_000);
const tenantCount = Number(process.argv[3] ?? 1000);

const p = await billingPlatform();
try {
  const found = billingAdmission(p.kernel);
  if (!found) throw new Error('no gateway admission in this process');
  const admission = found;
  progress('gateway-check', `seeding ${tenantCount} tenants`);
  const tenants = await tenantsWithTrials(p, tenantCount);
  const counted = (i: number) => ({
    tenantId: tenants[i % tenants.length]!,
    method: 'POST',
    route: '/v1/users',
    namespace: 'iam',
  });
  const read = (i: number) => ({
    tenantId: tenants[i % tenants.length]!,
    method: 'GET',
    route: '/v1/wallets',
    namespace: 'money',
  });
  for (let i = 0; i < tenants.length; i += 1) await admission.admit(counted(i)); // warm: every tenant's entries cached
  const measure = async (label: string, request: (i: number) => Parameters<typeof admission.admit>[0]) => {
    for (let round = 0; round < 3; round += 1) {
      const started = process.hrtime.bigint();
      for (let i = 0; i < iterations; i += 1) await admission.admit(request(i));
      const us = Number(process.hrtime.bigint() - started) / 1000 / iterations;
      console.log(`  ${label.padEnd(46)} round ${round + 1}: ${us.toFixed(2)} µs per request`);
    }
  };
  console.log(machine());
  console.log(
    `gateway billing admission, warm caches, ${tenants.length} tenants, ${iterations} requests per round (load average ${await loadAverage()}); aim < 20 µs`,
  );
  await measure('counted mutation (POST /v1/users)', counted);
  await measure('read (GET /v1/wallets: status rules only)', read);
} finally {
  await p.close();
}
