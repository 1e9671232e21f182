import { randomUUID } from 'node:crypto';
import { billingContext } from '../commands/billing/context';
import { createSubscription } from '../commands/billing/handlers';
import { FREE_PLAN_ID } from '../domain/billing/plan';
import { systemMeta } from '../infra/kernel';
import { seedTenant } from '../tests/support/billing';
import type { TestPlatform } from '../tests/support/platform';
import { startTestPlatform } from '../tests/support/platform';

/** a billing platform in this process (role all, PLATFORM_ENV=production: responses are not schema-checked) and tenants with trials */
export const billingPlatform = async (env: Record<string, string> = {}): Promise<TestPlatform> =>
  startTestPlatform({
    services: ['billing'],
    env: {
      PLATFORM_ENV: 'production',
      GRPC_PORT: '0',
      LOG_LEVEL: 'silent',
      BILLING_ESCALATION_INTERVAL_SEC: '3600',
      ...env,
    },
  });

export const tenantsWithTrials = async (p: TestPlatform, count: number): Promise<string[]> => {
  const tenants: string[] = [];
  for (let i = 0; i < count; i += 1) {
    const { tenantId } = await seedTenant(p.kernel.db, randomUUID());
    await p.kernel.commands.run(systemMeta(tenantId), (uow) =>
      createSubscription(uow, billingContext(p.kernel), { tenantId, planId: FREE_PLAN_ID, externalId: null }),
    );
    tenants.push(tenantId);
  }
  return tenants;
};

export const loadAverage = async (): Promise<string> =>
  (await import('node:os'))
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
