/**
 * The gateway's billing check per request when its caches are warm (issue 13 aim: < 20 µs): the
 * admission of a counted mutation (plan_info for the status rules, then limit:{tenant}:{resource} of a
 * route that counts records)
 * and of a plain GET, called as the edge calls it, one at a time, in process (no sockets).
 * With `redis` the platform's cache engine is the test Redis (TEST_REDIS_URL), as in a split
 * deployment: billing's epochs, which every cached answer is checked against, are read from it.
 * Usage: source .test-infra/env; npx tsx bench/billing-gateway-check.ts [iterations=200000] [tenants=1000] [memory|redis]
 */
import { randomUUID } from 'node:crypto';
import { billingContext } from '../commands/billing/context';
import { billingAdmission } from '../write-api/billing/serving';
import { billingPlatform, loadAverage, tenantsWithTrials } from './billing-support';
import { machine, progress } from './support';

const iterations = Number(process.argv[2] ?? 200_000);
const tenantCount = Number(process.argv[3] ?? 1000);
const engine = process.argv[4] ?? 'memory';
if (engine === 'redis' && !process.env.TEST_REDIS_URL) throw new Error('redis: source .test-infra/env first');

const p = await billingPlatform(
  engine === 'redis' ? { REDIS_URL: process.env.TEST_REDIS_URL!, REDIS_KEY_PREFIX: `bench-${randomUUID()}:` } : {},
);
try {
  const found = billingAdmission(p.kernel);
  if (!found) throw new Error('no gateway admission in this process');
  const admission = found;
  progress('gateway-check', `seeding ${tenantCount} tenants`);
  const tenants = await tenantsWithTrials(p, tenantCount);
  // a route that declares the resource it creates (route config counts): plan info, then CheckLimit
  const counted = (i: number) => ({
    tenantId: tenants[i % tenants.length]!,
    method: 'POST',
    route: '/v1/data/:module/:model',
    namespace: 'data',
    counts: 'records',
  });
  const read = (i: number) => ({
    tenantId: tenants[i % tenants.length]!,
    method: 'GET',
    route: '/v1/wallets',
    namespace: 'money',
  });
  for (let i = 0; i < tenants.length; i += 1) await admission.admit(counted(i)); // warm: every tenant's entries cached
  // the reads of billing's epochs (with Redis, each one a round trip): counted by wrapping them
  const epochs = billingContext(p.kernel).epochs;
  const current = epochs.current.bind(epochs);
  let epochReads = 0;
  epochs.current = (scopes) => {
    epochReads += 1;
    return current(scopes);
  };
  const measure = async (label: string, request: (i: number) => Parameters<typeof admission.admit>[0]) => {
    for (let round = 0; round < 3; round += 1) {
      epochReads = 0;
      const started = process.hrtime.bigint();
      for (let i = 0; i < iterations; i += 1) await admission.admit(request(i));
      const us = Number(process.hrtime.bigint() - started) / 1000 / iterations;
      console.log(
        `  ${label.padEnd(46)} round ${round + 1}: ${us.toFixed(2)} µs per request, ${(epochReads / iterations).toFixed(2)} epoch reads per request`,
      );
    }
  };
  console.log(machine());
  console.log(
    `gateway billing admission, warm caches, epochs in ${p.kernel.engines.cache.kind}, ${tenants.length} tenants, ${iterations} requests per round (load average ${await loadAverage()}); aim < 20 µs`,
  );
  await measure('counted mutation (POST /v1/data/…: records)', counted);
  await measure('read (GET /v1/wallets: status rules only)', read);
} finally {
  await p.close();
}
