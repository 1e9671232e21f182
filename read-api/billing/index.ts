import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { billingErrors } from '../../domain/billing/errors';
import {
  PlanView,
  planView,
  SubscriptionView,
  subscriptionView,
  TerminationStatusView,
  UsageSnapshotView,
  UsageView,
  countsView,
  usageView,
} from '../../domain/billing/views';
import { PLATFORM_WILDCARD } from '../../domain/shared/permissions';
import type { Principal } from '../../infra/http/auth';
import { decodeCursor, pageEnvelope, pageQuery, toPage } from '../../infra/http/pagination';
import { defineRoutes } from '../../infra/modules';
import {
  currentSubscription,
  findPlan,
  findSubscription,
  listActivePlans,
  tenantKnown,
  tenantSubscriptions,
  tenantUsage,
  usageHistory,
} from '../../projections/billing/queries';
import { callerOf } from '../../infra/http/auth';

const Id = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[0-9A-Za-z-]+$/, 'must be an id');
const view = { access: 'permission', permission: 'billing.view' } as const;
const TenantQuery = { tenant_id: Id.optional(), tenantId: Id.optional().describe('the same as tenant_id') };

const isPlatformOwner = (p: Principal): boolean => p.permissions.has(PLATFORM_WILDCARD) && !p.impersonatorId;

/**
 * The tenant a read concerns: the caller's own; another tenant's id is not found (no
 * enumeration) — except for the platform owner, who may name any tenant.
 */
const tenantAsked = (p: Principal, named: string | undefined): string => {
  if (named === undefined || named === p.tenantId) return p.tenantId;
  if (isPlatformOwner(p)) return named;
  throw billingErrors.tenantNotFound();
};

export default defineRoutes({
  namespace: 'billing',
  register(app, kernel) {
    const r = app.withTypeProvider<ZodTypeProvider>();

    r.get(
      '/billing/plans',
      {
        config: view,
        schema: {
          summary: 'The active plans',
          querystring: z.object({ ...pageQuery }),
          response: { 200: pageEnvelope(PlanView) },
        },
      },
      async (request) => {
        const after = decodeCursor(request.query.page_token, ['id']);
        const plans = await listActivePlans(kernel.db, { afterId: after?.id, limit: request.query.page_size + 1 });
        return toPage(plans, request.query.page_size, planView, (p) => ({ id: p.id }));
      },
    );

    r.get(
      '/billing/plans/:id',
      {
        config: view,
        schema: {
          summary: 'A plan: limits, pricing, features',
          params: z.object({ id: Id }),
          response: { 200: PlanView },
        },
      },
      async (request) => {
        const plan = await findPlan(kernel.db, request.params.id);
        if (!plan) throw billingErrors.planNotFound();
        return planView(plan);
      },
    );

    r.get(
      '/billing/subscriptions',
      {
        config: { ...view, problems: [404] }, // 404: a tenant_id of no tenant
        schema: {
          summary: "The tenant's subscriptions, the current one and those it replaced",
          querystring: z.object({ ...pageQuery, ...TenantQuery }),
          response: { 200: pageEnvelope(SubscriptionView) },
        },
      },
      async (request) => {
        const q = request.query;
        const tenantId = tenantAsked(callerOf(request), q.tenant_id ?? q.tenantId);
        const after = decodeCursor(q.page_token, ['id']);
        const rows = await tenantSubscriptions(kernel.db, tenantId, { afterId: after?.id, limit: q.page_size + 1 });
        return toPage(rows, q.page_size, subscriptionView, (s) => ({ id: s.id }));
      },
    );

    r.get(
      '/billing/subscriptions/:id',
      {
        config: view,
        schema: {
          summary: 'One subscription of the tenant',
          params: z.object({ id: Id }),
          response: { 200: SubscriptionView },
        },
      },
      async (request) => {
        const p = callerOf(request);
        const s = await findSubscription(kernel.db, request.params.id, isPlatformOwner(p) ? undefined : p.tenantId);
        if (!s) throw billingErrors.subscriptionNotFound();
        return subscriptionView(s);
      },
    );

    r.get(
      '/billing/usage',
      {
        config: { ...view, problems: [404] }, // 404: a tenant_id of no tenant
        schema: {
          summary: "Usage counters against the plan's limits for the current period",
          querystring: z.object(TenantQuery),
          response: { 200: UsageView },
        },
      },
      async (request) => {
        const tenantId = tenantAsked(callerOf(request), request.query.tenant_id ?? request.query.tenantId);
        const u = await tenantUsage(kernel.db, kernel.people, tenantId, kernel.clock.now());
        if (!u) throw billingErrors.tenantNotFound();
        return usageView(tenantId, u.subscription, u.usage, u.info.limits, kernel.clock.now().toISOString());
      },
    );

    r.get(
      '/billing/usage/history',
      {
        config: { ...view, problems: [404] }, // 404: a tenant_id of no tenant
        schema: {
          summary: 'Daily usage snapshots, newest first',
          querystring: z.object({ ...pageQuery, ...TenantQuery }),
          response: { 200: pageEnvelope(UsageSnapshotView) },
        },
      },
      async (request) => {
        const q = request.query;
        const tenantId = tenantAsked(callerOf(request), q.tenant_id ?? q.tenantId);
        const after = decodeCursor(q.page_token, z.object({ day: z.string().regex(/^\d{4}-\d{2}-\d{2}$/) }));
        const rows = await usageHistory(kernel.db, tenantId, { beforeDay: after?.day, limit: q.page_size + 1 });
        return toPage(
          rows,
          q.page_size,
          (row) => ({ day: row.day, usage: countsView(row.usage), takenAt: row.takenAt }),
          (row) => ({ day: row.day }),
        );
      },
    );

    r.get(
      '/admin/tenants/:id/termination-status',
      {
        config: { access: 'bearer' },
        schema: {
          summary: 'Where the termination of a tenant stands: its own members, or the platform owner for any tenant',
          params: z.object({ id: Id }),
          response: { 200: TerminationStatusView },
        },
      },
      async (request) => {
        const tenantId = tenantAsked(callerOf(request), request.params.id);
        const s = await currentSubscription(kernel.db, tenantId);
        if (!s && !(await tenantKnown(kernel.db, kernel.people, tenantId))) throw billingErrors.tenantNotFound();
        return {
          tenantId,
          status: s?.status ?? ('none' as const),
          phase: s?.termination?.phase ?? null,
          startedAt: s?.termination?.startedAt ?? null,
        };
      },
    );
  },
});
