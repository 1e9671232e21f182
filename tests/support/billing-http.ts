import { randomUUID } from 'node:crypto';
import { PLATFORM_TENANT_ID } from '../../domain/identity/constants';
import type { PlanSnapshot, ProviderPriceIds } from '../../domain/billing/plan';
import type { PlanLimits } from '../../domain/billing/resources';
import { billingContext } from '../../commands/billing/context';
import { escalationStep } from '../../commands/billing/escalation';
import { createPlan } from '../../commands/billing/handlers';
import type { Kernel } from '../../infra/kernel';
import { systemMeta } from '../../infra/kernel';
import type { IdentityPlatform } from './identity';
import { PASSWORD } from './identity';
import { pollUntil } from './poll';

/** limits at or above the free plan's in every field, so that a move from free is an upgrade */
export const generousLimits = (overrides: Partial<PlanLimits> = {}): PlanLimits => ({
  users: 50,
  records: 1_000_000,
  storageBytes: 100 * 1_073_741_824,
  eventsPerDay: 1_000_000,
  modules: 50,
  featureFlags: 500,
  customDomains: 10,
  includedSubtenants: 0,
  requestsPerMinute: 0,
  moneyMaxTransaction: 10_000_000,
  moneyMaxBalance: 100_000_000,
  ...overrides,
});

/** an operator's plan, made behind the API (the test process's kernel: the same database in either topology) */
export const operatorPlan = (
  kernel: Kernel,
  input: { priceCents: number; limits?: Partial<PlanLimits>; name?: string; providerPriceIds?: ProviderPriceIds },
): Promise<PlanSnapshot> =>
  kernel.commands.run(systemMeta(PLATFORM_TENANT_ID), (uow) =>
    createPlan(uow, billingContext(kernel), {
      name: input.name ?? `plan-${randomUUID()}`,
      description: 'test plan',
      priceCents: input.priceCents,
      currency: 'USD',
      limits: generousLimits(input.limits),
      features: [],
      providerPriceIds: input.providerPriceIds,
    }),
  );

/** one pass of the escalation worker, as the workers role runs it (here in the test process, on the shared clock) */
export const escalate = async (kernel: Kernel): Promise<void> => {
  await escalationStep(kernel, billingContext(kernel));
};

/** polls until check passes (the log carries changes to every process within about a second) */
export const eventually = async <T>(
  check: () => Promise<T>,
  accept: (value: T) => boolean,
  timeoutMs = 30_000,
  what = 'the condition',
): Promise<T> => pollUntil(check, accept, { timeoutMs, what });

/** a fresh access token (tokens last 15 minutes; tests move the clock by days) */
export const login = async (p: IdentityPlatform, email: string): Promise<string> => {
  const res = await p.api('/auth/login', { body: { email, password: PASSWORD } });
  if (res.status !== 200) throw new Error(`login failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.accessToken as string;
};

/** the tenant's current subscription through the API, once billing has given the new tenant its trial */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- response bodies are checked field by field
export const currentSubscriptionOf = async (p: IdentityPlatform, token: string): Promise<any> => {
  const res = await eventually(
    () => p.api('/billing/subscriptions', { token }),
    (r) => r.status === 200 && r.body.data.length > 0,
    15_000,
    "the tenant's trial",
  );
  return res.body.data.sort((a: { createdAt: string }, b: { createdAt: string }) =>
    b.createdAt.localeCompare(a.createdAt),
  )[0];
};
