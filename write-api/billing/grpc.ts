import type * as grpc from '@grpc/grpc-js';
import { PLATFORM_TENANT_ID } from '../../domain/identity/constants';
import { billingErrors, billingGrpcStatus } from '../../domain/billing/errors';
import type { PlanSnapshot, ProviderPriceIds } from '../../domain/billing/plan';
import type { PlanLimits, Resource } from '../../domain/billing/resources';
import { LIMIT_KEYS, LIMIT_OF, percentageOf, RESOURCES } from '../../domain/billing/resources';
import type { Subscription, SubscriptionStatus } from '../../domain/billing/subscription';
import { STATUSES } from '../../domain/billing/subscription';
import { isIsoCurrency } from '../../domain/money/iso-4217';
import { commonErrors } from '../../domain/shared/errors';
import type { UnitOfWork } from '../../infra/eventstore/unit-of-work';
import type { Kernel } from '../../infra/kernel';
import { systemMeta } from '../../infra/kernel';
import { decodeCursor, encodeCursor } from '../../infra/http/pagination';
import { loadService, unary } from '../../infra/grpc';
import { billingContext } from '../../commands/billing/context';
import * as billing from '../../commands/billing/handlers';
import { tenantUsage } from '../../commands/billing/reports';
import { findPlan, findSubscription, listPlans, listSubscriptions } from '../../commands/billing/lookups';
import { receiveWebhook } from '../../commands/billing/webhooks';

/**
 * platform.billing.v1.BillingService (spec 001, gRPC service): the 13 RPCs over billing's
 * commands and read models, served by write-api (and the all-in-one process). Callers are trusted
 * services authenticated by mutual TLS: no permission is checked per call.
 */
export const BILLING_PROTO = 'platform/billing/v1/billing_service.proto';
export const BILLING_SERVICE = 'platform.billing.v1.BillingService';

type Msg = Record<string, unknown>;

// ─── messages ──────────────────────────────────────────────────────────────────────────────────
const PROTO_LIMIT: Record<keyof PlanLimits, string> = {
  users: 'users',
  records: 'records',
  storageBytes: 'storage_bytes',
  eventsPerDay: 'events_per_day',
  modules: 'modules',
  featureFlags: 'feature_flags',
  customDomains: 'custom_domains',
  includedSubtenants: 'included_subtenants',
  requestsPerMinute: 'requests_per_minute',
  moneyMaxTransaction: 'money_max_transaction',
  moneyMaxBalance: 'money_max_balance',
};
export const RESOURCE_ENUM: Record<Resource, string> = Object.fromEntries(
  RESOURCES.map((r) => [r, `RESOURCE_TYPE_${r.toUpperCase()}`]),
) as Record<Resource, string>;
export const STATUS_ENUM: Record<SubscriptionStatus, string> = Object.fromEntries(
  STATUSES.map((s) => [s, `SUBSCRIPTION_STATUS_${s.toUpperCase()}`]),
) as Record<SubscriptionStatus, string>;

const invalid = (field: string, message: string) =>
  commonErrors.validation([{ field, message, code: 'INVALID_ARGUMENT' }], `${field}: ${message}`);

const count = (field: string, value: unknown): number => {
  const n = value === undefined ? 0 : Number(value);
  if (!Number.isSafeInteger(n) || n < 0) throw invalid(field, 'must be a whole number from 0 to 9007199254740991');
  return n;
};

const text = (field: string, value: unknown, required = true): string => {
  if (typeof value !== 'string' || value === '') {
    if (required) throw invalid(field, 'is required');
    return '';
  }
  if (value.length > 256 || value.includes('\0')) throw invalid(field, 'must be at most 256 characters of text');
  return value;
};

const limitsFrom = (message: unknown): PlanLimits => {
  const m = (message ?? {}) as Msg;
  return Object.fromEntries(
    LIMIT_KEYS.map((k) => [k, count(`limits.${PROTO_LIMIT[k]}`, m[PROTO_LIMIT[k]])]),
  ) as unknown as PlanLimits;
};

const features = (value: unknown): string[] => {
  const list = Array.isArray(value) ? value : [];
  if (list.length > 500) throw invalid('features', 'at most 500 features');
  return list.map((f, i) => text(`features[${i}]`, f));
};

/** a provider's price id: printable, no spaces (Stripe price_…, Paddle pri_…) */
const priceIds = (field: string, value: unknown): string[] => {
  const list = Array.isArray(value) ? value : [];
  if (list.length > 50) throw invalid(field, 'at most 50 price ids');
  return list.map((id, i) => {
    if (typeof id !== 'string' || !/^[\x21-\x7e]{1,200}$/.test(id))
      throw invalid(`${field}[${i}]`, 'must be a price id: 1 to 200 printable characters without spaces');
    return id;
  });
};

const providerPriceIdsFrom = (message: unknown): ProviderPriceIds => {
  const m = (message ?? {}) as Msg;
  return {
    stripe: priceIds('provider_price_ids.stripe', m.stripe),
    paddle: priceIds('provider_price_ids.paddle', m.paddle),
  };
};

const planMessage = (p: PlanSnapshot) => ({
  id: p.id,
  name: p.name,
  description: p.description,
  price_cents: String(p.priceCents),
  currency: p.currency,
  limits: Object.fromEntries(LIMIT_KEYS.map((k) => [PROTO_LIMIT[k], String(p.limits[k])])),
  features: p.features,
  is_active: p.isActive,
  created_at: p.createdAt,
  updated_at: p.updatedAt,
  provider_price_ids: p.providerPriceIds,
});

const subscriptionMessage = (s: Subscription) => ({
  id: s.id,
  tenant_id: s.tenantId,
  plan_id: s.planId,
  status: STATUS_ENUM[s.status],
  version: s.version,
  current_period_start: s.currentPeriodStart,
  current_period_end: s.currentPeriodEnd,
  trial_end: s.trialEnd ?? '',
  canceled_at: s.canceledAt ?? '',
  external_id: s.externalId ?? '',
  pending_plan_id: s.pendingPlanId ?? '',
  downgrade_at: s.downgradeAt ?? '',
  created_at: s.createdAt,
  updated_at: s.updatedAt,
});

/** page_size: default 20, at most 100 (docs/decisions.md) */
const pageSize = (value: unknown): number => {
  const n = value === undefined ? 0 : Number(value);
  if (!Number.isInteger(n) || n < 0) throw invalid('page_size', 'must be from 0 (the default, 20) to 100');
  return n === 0 ? 20 : Math.min(n, 100);
};

const page = <T>(items: T[], size: number, idOf: (t: T) => string) => {
  const data = items.slice(0, size);
  return { data, next_page_token: items.length > size ? encodeCursor({ id: idOf(data[data.length - 1]!) }) : '' };
};

const resourceOf = (value: unknown): Resource => {
  const found = RESOURCES.find((r) => RESOURCE_ENUM[r] === value);
  if (!found) throw invalid('resource', 'must be a resource type other than RESOURCE_TYPE_UNSPECIFIED');
  return found;
};

// ─── the service ───────────────────────────────────────────────────────────────────────────────
export const billingServiceDefinition = (): grpc.ServiceDefinition => loadService(BILLING_PROTO, BILLING_SERVICE);

export const billingServiceImplementation = (kernel: Kernel): grpc.UntypedServiceImplementation => {
  const ctx = billingContext(kernel);
  const asPlatform = <T>(fn: (uow: UnitOfWork) => Promise<T>): Promise<T> =>
    kernel.commands.run(systemMeta(PLATFORM_TENANT_ID), fn);
  /** the subscription's tenant, for the command's envelope and lookups */
  const tenantOfSubscription = async (id: string): Promise<string> => {
    const s = await findSubscription(kernel.db, id);
    if (!s) throw billingErrors.subscriptionNotFound();
    return s.tenantId;
  };
  const rpc = <Res>(name: string, handler: (request: Msg) => Promise<Res>) =>
    unary<Msg, Res>(kernel.logger, name, (request) => handler(request), billingGrpcStatus);

  return {
    CreatePlan: rpc('CreatePlan', async (r) => {
      // a proto3 client puts no zero value on the wire: description "" and price_cents 0 (a free
      // plan) arrive as absent, so only what has presence or cannot be zero is required
      const name = text('name', r.name);
      const currency = text('currency', r.currency);
      if (!isIsoCurrency(currency)) throw invalid('currency', 'must be an ISO 4217 currency code such as USD');
      if (r.limits === undefined) throw invalid('limits', 'is required');
      const input = {
        name,
        description: text('description', r.description, false),
        priceCents: count('price_cents', r.price_cents),
        currency,
        limits: limitsFrom(r.limits),
        features: features(r.features),
        providerPriceIds: providerPriceIdsFrom(r.provider_price_ids),
      };
      return { plan: planMessage(await asPlatform((uow) => billing.createPlan(uow, ctx, input))) };
    }),
    RetrievePlan: rpc('RetrievePlan', async (r) => {
      const plan = await findPlan(kernel.db, text('id', r.id));
      if (!plan) throw billingErrors.planNotFound();
      return { plan: planMessage(plan) };
    }),
    ListPlans: rpc('ListPlans', async (r) => {
      const size = pageSize(r.page_size);
      const after = decodeCursor(text('page_token', r.page_token, false) || undefined, ['id']);
      const plans = await listPlans(kernel.db, {
        includeInactive: r.include_inactive === true,
        afterId: after?.id,
        limit: size + 1,
      });
      const { data, next_page_token } = page(plans, size, (p) => p.id);
      return { data: data.map(planMessage), next_page_token };
    }),
    UpdatePlan: rpc('UpdatePlan', async (r) => {
      const id = text('id', r.id);
      const patch = {
        ...(r.name !== undefined ? { name: text('name', r.name) } : {}),
        ...(r.description !== undefined ? { description: text('description', r.description, false) } : {}),
        ...(r.price_cents !== undefined ? { priceCents: count('price_cents', r.price_cents) } : {}),
        ...(r.is_active !== undefined ? { isActive: r.is_active === true } : {}),
        ...(r.limits !== undefined ? { limits: limitsFrom(r.limits) } : {}),
        ...(r.replace_features === true || (Array.isArray(r.features) && r.features.length > 0)
          ? { features: features(r.features) }
          : {}),
        ...(r.provider_price_ids !== undefined && r.provider_price_ids !== null
          ? { providerPriceIds: providerPriceIdsFrom(r.provider_price_ids) }
          : {}),
      };
      if (!(await findPlan(kernel.db, id))) throw billingErrors.planNotFound();
      return { plan: planMessage(await asPlatform((uow) => billing.updatePlan(uow, ctx, id, patch))) };
    }),
    CreateSubscription: rpc('CreateSubscription', async (r) => {
      const tenantId = text('tenant_id', r.tenant_id);
      const planId = text('plan_id', r.plan_id);
      const externalId = text('external_id', r.external_id, false) || null;
      const s = await kernel.commands.run(systemMeta(tenantId), (uow) =>
        billing.createSubscription(uow, ctx, { tenantId, planId, externalId }),
      );
      return { subscription: subscriptionMessage(s) };
    }),
    RetrieveSubscription: rpc('RetrieveSubscription', async (r) => {
      const s = await findSubscription(kernel.db, text('id', r.id));
      if (!s) throw billingErrors.subscriptionNotFound();
      return { subscription: subscriptionMessage(s) };
    }),
    ListSubscriptions: rpc('ListSubscriptions', async (r) => {
      const size = pageSize(r.page_size);
      const after = decodeCursor(text('page_token', r.page_token, false) || undefined, ['id']);
      const status =
        r.status === undefined || r.status === 'SUBSCRIPTION_STATUS_UNSPECIFIED'
          ? undefined
          : STATUSES.find((s) => STATUS_ENUM[s] === r.status);
      if (r.status !== undefined && r.status !== 'SUBSCRIPTION_STATUS_UNSPECIFIED' && !status)
        throw invalid('status', 'is not a subscription status');
      const tenantId = text('tenant_id', r.tenant_id, false) || undefined;
      const rows = await listSubscriptions(kernel.db, { tenantId, status, afterId: after?.id, limit: size + 1 });
      const { data, next_page_token } = page(rows, size, (s) => s.id);
      return { data: data.map(subscriptionMessage), next_page_token };
    }),
    UpdateSubscription: rpc('UpdateSubscription', async (r) => {
      const id = text('id', r.id);
      const planId = text('plan_id', r.plan_id);
      const version = Number(r.version ?? 0);
      if (!Number.isInteger(version) || version < 1)
        throw invalid('version', 'is required: the version the caller read');
      const tenantId = await tenantOfSubscription(id);
      const s = await kernel.commands.run(systemMeta(tenantId), (uow) =>
        billing.changePlan(uow, ctx, tenantId, id, { planId, version }),
      );
      return { subscription: subscriptionMessage(s) };
    }),
    CancelSubscription: rpc('CancelSubscription', async (r) => {
      const id = text('id', r.id);
      const tenantId = await tenantOfSubscription(id);
      await kernel.commands.run(systemMeta(tenantId), (uow) => billing.cancelSubscription(uow, ctx, tenantId, id));
      return {};
    }),
    CancelDowngrade: rpc('CancelDowngrade', async (r) => {
      const id = text('id', r.id);
      const tenantId = await tenantOfSubscription(id);
      const s = await kernel.commands.run(systemMeta(tenantId), (uow) =>
        billing.cancelDowngrade(uow, ctx, tenantId, id),
      );
      return { subscription: subscriptionMessage(s) };
    }),
    RetrieveUsage: rpc('RetrieveUsage', async (r) => {
      const { tenantId, subscription, info, usage } = await tenantUsage(kernel, ctx, text('tenant_id', r.tenant_id));
      const resource = (res: Resource) => {
        const limit = info.limits[LIMIT_OF[res]];
        return { used: String(usage[res]), limit: String(limit), percentage: percentageOf(usage[res], limit) };
      };
      return {
        report: {
          tenant_id: tenantId,
          period_start: subscription?.currentPeriodStart ?? '',
          period_end: subscription?.currentPeriodEnd ?? '',
          users: resource('users'),
          records: resource('records'),
          storage: resource('storage_bytes'),
          events: resource('events_per_day'),
          modules: resource('modules'),
          feature_flags: resource('feature_flags'),
          custom_domains: resource('custom_domains'),
        },
      };
    }),
    CheckLimit: rpc('CheckLimit', async (r) => {
      const a = await ctx.book.checkLimit(text('tenant_id', r.tenant_id), resourceOf(r.resource));
      return {
        resource: RESOURCE_ENUM[a.resource],
        allowed: a.allowed,
        current_usage: String(a.currentUsage),
        limit: String(a.limit),
        remaining: String(a.remaining),
      };
    }),
    HandleWebhook: rpc('HandleWebhook', async (r) => {
      const provider = text('provider', r.provider);
      const raw = r.raw_body;
      if (!Buffer.isBuffer(raw) || raw.length === 0)
        throw billingErrors.malformedWebhook('raw_body is required: the exact bytes the provider sent.');
      const headers = Object.fromEntries(
        Object.entries((r.headers ?? {}) as Record<string, string>).map(([k, v]) => [k.toLowerCase(), v]),
      );
      const a = await receiveWebhook(kernel, ctx, provider, headers, raw);
      return { processed: a.processed, event_id: a.eventId, event_type: a.eventType };
    }),
  };
};
