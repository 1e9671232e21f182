import type { ErasurePhase } from '../../domain/shared/erasure';
import { billingErrors } from '../../domain/billing/errors';
import type { Plan, PlanPatch, PlanSnapshot, ProviderPriceIds } from '../../domain/billing/plan';
import { FREE_PLAN, FREE_PLAN_ID, NO_PRICE_IDS } from '../../domain/billing/plan';
import type { PlanLimits } from '../../domain/billing/resources';
import type { PlanFacts, Subscription, SubscriptionCommand } from '../../domain/billing/subscription';
import { plusDays } from '../../domain/billing/timeline';
import type { UnitOfWork } from '../../infra/eventstore/unit-of-work';
import type { Queryable } from '../../infra/postgres/db';
import { PlanAggregate, planStream, SubscriptionAggregate, subscriptionStream } from './aggregates';
import type { BillingContext } from './context';
import {
  externalIdHolder,
  findPlan,
  findPlanByName,
  findSubscription,
  hasActiveSubscribers,
  plansByProviderPrices,
} from './lookups';

const nowOf = (ctx: BillingContext): string => ctx.clock.now().toISOString();

const factsOf = (p: PlanSnapshot): PlanFacts => ({
  id: p.id,
  priceCents: p.priceCents,
  isActive: p.isActive,
  limits: p.limits,
});

const planOrNotFound = async (q: Queryable, planId: string): Promise<PlanSnapshot> => {
  const plan = await findPlan(q, planId);
  if (!plan) throw billingErrors.planNotFound();
  return plan;
};

/** plan names are unique (case-insensitive): creators of one name are serialized, then the read model is asked */
const claimName = async (uow: UnitOfWork, name: string, exceptId: string | null): Promise<void> => {
  await uow.tx.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [
    `billing.plan-name:${name.toLowerCase()}`,
  ]);
  const holder = await findPlanByName(uow.tx, name);
  if (holder && holder.id !== exceptId) throw billingErrors.planNameTaken(name);
};

/**
 * A provider's price id names one plan: the claims of each id are serialized (in one order, so two
 * claimants never wait on each other), then the read model is asked who holds it. Answers the ids
 * without repeats.
 */
const claimPriceIds = async (uow: UnitOfWork, ids: ProviderPriceIds, planId: string): Promise<ProviderPriceIds> => {
  const claimed: ProviderPriceIds = { stripe: [...new Set(ids.stripe)], paddle: [...new Set(ids.paddle)] };
  for (const provider of ['paddle', 'stripe'] as const) {
    for (const priceId of [...claimed[provider]].sort()) {
      await uow.tx.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [
        `billing.plan-price:${provider}:${priceId}`,
      ]);
    }
    const holders = await plansByProviderPrices(uow.tx, provider, claimed[provider]);
    const other = holders.find((h) => h.id !== planId);
    if (other) {
      const taken = claimed[provider].find((id) => other.providerPriceIds[provider].includes(id));
      throw billingErrors.providerPriceTaken(provider, taken ?? '');
    }
  }
  return claimed;
};

export interface NewPlan {
  name: string;
  description: string;
  priceCents: number;
  currency: string;
  limits: PlanLimits;
  features: string[];
  /** none when left out */
  providerPriceIds?: ProviderPriceIds;
}

export const createPlan = async (uow: UnitOfWork, ctx: BillingContext, input: NewPlan): Promise<PlanSnapshot> => {
  await claimName(uow, input.name, null);
  const id = ctx.ids.next();
  const providerPriceIds = await claimPriceIds(uow, input.providerPriceIds ?? NO_PRICE_IDS, id);
  const loaded = await uow.load(PlanAggregate, planStream(id));
  const { state } = uow.decide(PlanAggregate, loaded, {
    type: 'CreatePlan',
    plan: { id, ...input, features: [...new Set(input.features)], providerPriceIds },
    now: nowOf(ctx),
  });
  uow.afterCommit(() => ctx.changed(null));
  return snapshotOrFail(state);
};

export const updatePlan = async (
  uow: UnitOfWork,
  ctx: BillingContext,
  planId: string,
  patch: PlanPatch,
): Promise<PlanSnapshot> => {
  if (patch.name !== undefined) await claimName(uow, patch.name, planId);
  const providerPriceIds =
    patch.providerPriceIds === undefined ? undefined : await claimPriceIds(uow, patch.providerPriceIds, planId);
  const loaded = await uow.load(PlanAggregate, planStream(planId), { lock: true });
  const hasSubscribers = patch.isActive === false ? await hasActiveSubscribers(uow.tx, planId) : false;
  const features = patch.features === undefined ? undefined : [...new Set(patch.features)];
  const { state } = uow.decide(PlanAggregate, loaded, {
    type: 'UpdatePlan',
    patch: { ...patch, features, providerPriceIds },
    now: nowOf(ctx),
    hasActiveSubscribers: hasSubscribers,
  });
  uow.afterCommit(() => ctx.changed(null));
  return snapshotOrFail(state);
};

const snapshotOrFail = (state: Plan): PlanSnapshot => {
  if (state.status !== 'exists') throw billingErrors.planNotFound();
  const { status: _status, ...plan } = state;
  return plan;
};

/** the free plan every tenant starts on: created at the first start, left as it is afterwards */
export const seedFreePlan = async (uow: UnitOfWork, ctx: BillingContext): Promise<void> => {
  const loaded = await uow.load(PlanAggregate, planStream(FREE_PLAN_ID));
  uow.decide(PlanAggregate, loaded, { type: 'SeedPlan', plan: FREE_PLAN, now: nowOf(ctx) });
};

/** the account of the subscription's tenant; another tenant's subscription is not found (tenantId given: the caller's) */
const accountOf = async (uow: UnitOfWork, subscriptionId: string, tenantId: string | null) => {
  const known = await findSubscription(uow.tx, subscriptionId, tenantId ?? undefined);
  if (!known) throw billingErrors.subscriptionNotFound();
  return uow.load(SubscriptionAggregate, subscriptionStream(known.tenantId));
};

const decide = (
  uow: UnitOfWork,
  ctx: BillingContext,
  loaded: Awaited<ReturnType<typeof accountOf>>,
  command: SubscriptionCommand,
): Subscription => {
  const { events, state } = uow.decide(SubscriptionAggregate, loaded, command);
  if (state.status !== 'exists') throw billingErrors.subscriptionNotFound();
  if (events.length) uow.afterCommit(() => ctx.changed(state.subscription.tenantId));
  return state.subscription;
};

/**
 * The tenant an externalId is bound to, read under a transaction lock on the id: two commands
 * binding one id are serialized, and the second sees the first's binding (written by the inline
 * projection in its transaction) once it committed — the read model's primary key is the backstop.
 */
const holderOf = async (uow: UnitOfWork, externalId: string): Promise<string | null> => {
  await uow.tx.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`billing.external-id:${externalId}`]);
  return externalIdHolder(uow.tx, externalId);
};

export interface NewSubscription {
  tenantId: string;
  planId: string;
  externalId: string | null;
  /** a new tenant's trial (tenant created, backfill): nothing to do when it has a subscription */
  automatic?: boolean;
}

export const createSubscription = async (
  uow: UnitOfWork,
  ctx: BillingContext,
  input: NewSubscription,
): Promise<Subscription> => {
  if (!(await ctx.tenants.exists(uow.tx, input.tenantId))) throw billingErrors.tenantNotFound();
  const plan = await planOrNotFound(uow.tx, input.planId);
  const now = nowOf(ctx);
  const loaded = await uow.load(SubscriptionAggregate, subscriptionStream(input.tenantId));
  return decide(uow, ctx, loaded, {
    type: 'CreateSubscription',
    subscriptionId: ctx.ids.next(),
    tenantId: input.tenantId,
    plan: factsOf(plan),
    externalId: input.externalId,
    externalIdHolder: input.externalId === null ? null : await holderOf(uow, input.externalId),
    trialEnd: plusDays(now, ctx.settings.trialDays),
    automatic: input.automatic ?? false,
    now,
  });
};

export const changePlan = async (
  uow: UnitOfWork,
  ctx: BillingContext,
  tenantId: string | null,
  subscriptionId: string,
  input: { planId: string; version: number },
): Promise<Subscription> => {
  const loaded = await accountOf(uow, subscriptionId, tenantId);
  const plan = await planOrNotFound(uow.tx, input.planId);
  const currentPlanId = loaded.state.status === 'exists' ? loaded.state.subscription.planId : FREE_PLAN_ID;
  const currentPlan = (await findPlan(uow.tx, currentPlanId)) ?? {
    ...FREE_PLAN,
    isActive: true,
    createdAt: '',
    updatedAt: '',
  };
  return decide(uow, ctx, loaded, {
    type: 'ChangePlan',
    subscriptionId,
    version: input.version,
    plan: factsOf(plan),
    currentPlan: factsOf(currentPlan),
    now: nowOf(ctx),
  });
};

export const cancelSubscription = async (
  uow: UnitOfWork,
  ctx: BillingContext,
  tenantId: string | null,
  subscriptionId: string,
): Promise<Subscription> =>
  decide(uow, ctx, await accountOf(uow, subscriptionId, tenantId), {
    type: 'CancelSubscription',
    subscriptionId,
    now: nowOf(ctx),
  });

export const cancelDowngrade = async (
  uow: UnitOfWork,
  ctx: BillingContext,
  tenantId: string | null,
  subscriptionId: string,
): Promise<Subscription> =>
  decide(uow, ctx, await accountOf(uow, subscriptionId, tenantId), {
    type: 'CancelDowngrade',
    subscriptionId,
    now: nowOf(ctx),
  });

/**
 * The platform owner binds a subscription to the payment provider's subscription id (any tenant's
 * subscription; tenant-supplied ids are refused at the route). An id bound to another tenant is
 * 409 conflict; the same id again changes nothing.
 */
export const setExternalId = async (
  uow: UnitOfWork,
  ctx: BillingContext,
  subscriptionId: string,
  externalId: string,
): Promise<Subscription> => {
  const loaded = await accountOf(uow, subscriptionId, null);
  if (loaded.state.status !== 'exists' || loaded.state.subscription.id !== subscriptionId)
    throw billingErrors.subscriptionNotFound();
  return decide(uow, ctx, loaded, {
    type: 'LinkExternal',
    externalId,
    holder: await holderOf(uow, externalId),
    now: nowOf(ctx),
  });
};

/** the platform owner's recovery of a tenant before its termination completes */
export const recoverTenant = async (uow: UnitOfWork, ctx: BillingContext, tenantId: string): Promise<Subscription> => {
  const loaded = await uow.load(SubscriptionAggregate, subscriptionStream(tenantId));
  if (loaded.state.status !== 'exists') throw billingErrors.subscriptionNotFound();
  return decide(uow, ctx, loaded, { type: 'Recover', now: nowOf(ctx) });
};

/**
 * A provider event's effect on the tenant's subscription (webhook processing): its commands decided
 * in turn on one loaded account (a link, then the payment or the plan the provider names).
 */
export type ProviderCommand =
  | Extract<SubscriptionCommand, { type: 'RecordPayment' | 'RecordPaymentFailure' | 'RecordProviderCancellation' }>
  /** the provider's subscription id, linked unless another tenant holds it */
  | { type: 'LinkExternal'; externalId: string; now: string }
  | { type: 'SyncPlan'; planId: string; now: string };

export const applyProviderCommands = async (
  uow: UnitOfWork,
  ctx: BillingContext,
  tenantId: string,
  commands: ProviderCommand[],
): Promise<void> => {
  const loaded = await uow.load(SubscriptionAggregate, subscriptionStream(tenantId));
  for (const c of commands) {
    if (c.type === 'LinkExternal') {
      decide(uow, ctx, loaded, { ...c, holder: await holderOf(uow, c.externalId) });
      continue;
    }
    if (c.type !== 'SyncPlan') {
      decide(uow, ctx, loaded, c);
      continue;
    }
    if (loaded.state.status !== 'exists') throw billingErrors.subscriptionNotFound();
    const s = loaded.state.subscription;
    const plan = await planOrNotFound(uow.tx, c.planId);
    const currentPlan = (await findPlan(uow.tx, s.planId)) ?? {
      ...FREE_PLAN,
      isActive: true,
      createdAt: '',
      updatedAt: '',
    };
    decide(uow, ctx, loaded, {
      type: 'ChangePlan',
      subscriptionId: s.id,
      version: s.version,
      plan: factsOf(plan),
      currentPlan: factsOf(currentPlan),
      now: c.now,
    });
  }
};

/** the escalation worker's step for one tenant: what the clock makes due (domain/billing/subscription.ts Advance) */
export const advanceSubscription = async (
  uow: UnitOfWork,
  ctx: BillingContext,
  tenantId: string,
  facts: { overLimit: boolean; noticesSent: number; erased?: Partial<Record<ErasurePhase, boolean>> },
): Promise<Subscription | null> => {
  const loaded = await uow.load(SubscriptionAggregate, subscriptionStream(tenantId));
  if (loaded.state.status !== 'exists') return null;
  const s = loaded.state.subscription;
  const plan = (await findPlan(uow.tx, s.planId)) ?? { ...FREE_PLAN, isActive: true, createdAt: '', updatedAt: '' };
  const pending = s.pendingPlanId ? await findPlan(uow.tx, s.pendingPlanId) : null;
  return decide(uow, ctx, loaded, {
    type: 'Advance',
    now: nowOf(ctx),
    plan: factsOf(plan),
    pendingPlan: pending ? factsOf(pending) : null,
    overLimit: facts.overLimit,
    noticesSent: facts.noticesSent,
    erased: facts.erased,
  });
};
