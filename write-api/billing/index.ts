import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { PLATFORM_TENANT_ID } from '../../domain/identity/constants';
import { billingErrors } from '../../domain/billing/errors';
import { isResource } from '../../domain/billing/resources';
import { SubscriptionView, subscriptionView, TerminationStatusView } from '../../domain/billing/views';
import { PLATFORM_WILDCARD } from '../../domain/shared/permissions';
import { billingContext } from '../../commands/billing/context';
import * as billing from '../../commands/billing/handlers';
import { assertRoom } from '../../commands/billing/limits';
import { findSubscription } from '../../commands/billing/lookups';
import { receiveWebhook, SIGNATURE_HEADERS } from '../../commands/billing/webhooks';
import { installMoneyBillingPorts } from '../../commands/money/context';
import { startBillingServing } from './serving';
import type { Principal } from '../../infra/http/auth';
import { executeCommand } from '../../infra/http/commands';
import type { Kernel } from '../../infra/kernel';
import { setUsageLimits } from '../../infra/usage-limits';
import { systemMeta } from '../../infra/kernel';
import { defineRoutes } from '../../infra/services';
import { callerOf } from '../../infra/http/auth';

const Id = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[0-9A-Za-z-]+$/, 'must be an id');
const IdParams = z.object({ id: Id });
/** a blocked tenant's way back: choosing and paying for a plan is never refused for the subscription's status */
const change = {
  access: 'permission',
  permission: 'billing.plan.change',
  idempotency: 'optional',
  whileSuspended: 'allowed',
} as const;

export const BILLING_PERMISSIONS: Record<string, string> = {
  'billing.view': 'read plans, subscriptions and usage',
  'billing.plan.change': 'choose, change and cancel the subscription',
  'billing.payment.manage': 'manage payment methods (planned)',
  'billing.info.update': 'change billing information (planned)',
  'billing.export': 'export invoices (planned)',
};

export const isPlatformOwner = (p: Principal | undefined): boolean =>
  Boolean(p?.permissions.has(PLATFORM_WILDCARD) && !p.impersonatorId);

/** provider webhooks carry no token: their bytes must reach the signature check exactly as sent */
const webhookRoutes =
  (kernel: Kernel) =>
  async (scope: FastifyInstance): Promise<void> => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
    const r = scope.withTypeProvider<ZodTypeProvider>();
    r.post(
      '/billing/webhooks/:provider',
      {
        config: { access: 'public', problems: [401], forwardHeaders: Object.values(SIGNATURE_HEADERS) },
        schema: {
          summary:
            'Payment-provider webhook receiver (stripe, paddle): verified by the provider signature header over the raw body',
          params: z.object({ provider: z.string().min(1).max(32) }),
          response: {
            200: z.object({
              processed: z.boolean().describe('false for a replayed event id: no effect'),
              eventId: z.string(),
              eventType: z.string(),
            }),
          },
        },
      },
      async (request) => {
        const raw = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
        return receiveWebhook(kernel, billingContext(kernel), request.params.provider, request.headers, raw);
      },
    );
  };

export default defineRoutes({
  namespace: 'billing',
  permissions: BILLING_PERMISSIONS,
  async start(kernel) {
    const ctx = billingContext(kernel);
    await kernel.commands.run(systemMeta(PLATFORM_TENANT_ID), (uow) => billing.seedFreePlan(uow, ctx));
    if (!ctx.settings.enabled) return;
    // money's plan limits and subscription hook come from billing from now on
    installMoneyBillingPorts(kernel, {
      limitsSource: {
        fetch: async (tenantId) => {
          const { limits } = await ctx.book.planInfo(tenantId);
          return { maxTxAmount: BigInt(limits.moneyMaxTransaction), maxBalance: BigInt(limits.moneyMaxBalance) };
        },
      },
      subscriptions: {
        statusOf: async (tenantId) => {
          const { status } = await ctx.book.planInfo(tenantId);
          return status === 'none' ? 'trialing' : status;
        },
      },
    });
    // services that meter a resource under their own lock (identity's seats, the registry's installations)
    setUsageLimits(kernel, {
      limitOf: async (tenantId, resource) =>
        tenantId === PLATFORM_TENANT_ID || !isResource(resource) ? 0 : ctx.book.limitOf(tenantId, resource),
      changed: (tenantId) => ctx.usageChanged(tenantId),
      assertRoom: (tx, tenantId, resource, adding) => assertRoom(ctx.book, ctx.clock, tx, tenantId, resource, adding),
    });
    await startBillingServing(kernel, ctx);
  },
  async register(app, kernel) {
    const r = app.withTypeProvider<ZodTypeProvider>();
    const ctx = () => billingContext(kernel);
    const tenantOf = (request: { principal?: Principal }) => callerOf(request).tenantId;
    /** the provider subscription id decides whose subscription a payment activates: never a tenant's to name */
    const refuseTenantExternalId = (request: { principal?: Principal }, externalId: string | undefined) => {
      if (externalId !== undefined && !isPlatformOwner(request.principal)) throw billingErrors.externalIdNotAllowed();
    };
    const ExternalId = z.string().min(1).max(256);
    const platformOnly =
      "the payment provider's subscription id: set by the provider's verified webhooks or the platform owner; 403 from anyone else";

    r.post(
      '/billing/subscriptions',
      {
        config: { ...change, problems: [402, 404, 409, 422] },
        schema: {
          summary:
            "Choose the tenant's plan: its first subscription (a trial), or a new one after a cancellation — without a trial: active on the free plan, past_due until paid on a paid one. A terminated tenant returns only through the platform owner's recovery (402).",
          body: z.object({ planId: Id, externalId: ExternalId.optional().describe(platformOnly) }),
          response: { 201: SubscriptionView },
        },
      },
      (request, reply) => {
        refuseTenantExternalId(request, request.body.externalId);
        return executeCommand(kernel, request, reply, { status: 201, idempotency: 'optional' }, async (uow) =>
          subscriptionView(
            await billing.createSubscription(uow, ctx(), {
              tenantId: tenantOf(request),
              planId: request.body.planId,
              externalId: request.body.externalId ?? null,
            }),
          ),
        );
      },
    );

    r.patch(
      '/billing/subscriptions/:id',
      {
        config: { ...change, problems: [404, 409, 422] },
        schema: {
          summary:
            'Change the plan: an upgrade at once, a downgrade at the end of the period (pendingChange); version is the optimistic lock',
          params: IdParams,
          body: z.object({
            planId: Id,
            version: z.number().int().min(1),
            externalId: ExternalId.optional().describe(
              `${platformOnly} (the platform owner: PUT /billing/subscriptions/{id}/external-id)`,
            ),
          }),
          response: { 200: SubscriptionView },
        },
      },
      (request, reply) => {
        refuseTenantExternalId(request, request.body.externalId);
        const { planId, version } = request.body;
        return executeCommand(kernel, request, reply, { idempotency: 'optional' }, async (uow) =>
          subscriptionView(
            await billing.changePlan(uow, ctx(), tenantOf(request), request.params.id, { planId, version }),
          ),
        );
      },
    );

    r.put(
      '/billing/subscriptions/:id/external-id',
      {
        config: { access: 'bearer', whileSuspended: 'allowed', problems: [403, 404, 409] },
        schema: {
          summary:
            "The platform owner binds a tenant's subscription to the payment provider's subscription id (unique across tenants; 409 when another tenant's)",
          params: IdParams,
          body: z.object({ externalId: ExternalId }),
          response: { 200: SubscriptionView },
        },
      },
      async (request, reply) => {
        if (!isPlatformOwner(request.principal)) throw billingErrors.notPlatformOwner();
        const subscriptionId = request.params.id;
        const known = await findSubscription(kernel.db, subscriptionId);
        if (!known) throw billingErrors.subscriptionNotFound();
        // the events are the tenant's (its stream, its read models); the actor is the platform owner
        const s = await kernel.commands.run(
          {
            ...systemMeta(known.tenantId),
            actorId: callerOf(request).userId,
            traceId: request.id,
            correlationId: request.id,
          },
          (uow) => billing.setExternalId(uow, ctx(), subscriptionId, request.body.externalId),
        );
        return reply.send(subscriptionView(s));
      },
    );

    r.delete(
      '/billing/subscriptions/:id',
      {
        config: { ...change, problems: [404, 422] },
        schema: {
          summary: 'Cancel: the subscription ends with its current period (cancelAtPeriodEnd)',
          params: IdParams,
          response: { 200: SubscriptionView },
        },
      },
      (request, reply) =>
        executeCommand(kernel, request, reply, { idempotency: 'optional' }, async (uow) =>
          subscriptionView(await billing.cancelSubscription(uow, ctx(), tenantOf(request), request.params.id)),
        ),
    );

    r.post(
      '/billing/subscriptions/:id/cancel-downgrade',
      {
        config: { ...change, problems: [404, 422] },
        schema: {
          summary: 'Withdraw the pending downgrade',
          params: IdParams,
          body: z.object({ reason: z.string().max(500).optional() }).prefault({}),
          response: { 200: SubscriptionView },
        },
      },
      (request, reply) =>
        executeCommand(kernel, request, reply, { idempotency: 'optional' }, async (uow) =>
          subscriptionView(await billing.cancelDowngrade(uow, ctx(), tenantOf(request), request.params.id)),
        ),
    );

    r.post(
      '/admin/tenants/:id/recover',
      {
        config: { access: 'bearer', whileSuspended: 'allowed', problems: [404, 422] },
        schema: {
          summary:
            'The platform owner brings a suspended or terminated tenant back to active, until its termination completes',
          params: IdParams,
          response: { 200: TerminationStatusView },
        },
      },
      async (request, reply) => {
        if (!isPlatformOwner(request.principal)) throw billingErrors.notPlatformOwner();
        const tenantId = request.params.id;
        const s = await kernel.commands.run(
          {
            ...systemMeta(tenantId),
            actorId: callerOf(request).userId,
            traceId: request.id,
            correlationId: request.id,
          },
          (uow) => billing.recoverTenant(uow, ctx(), tenantId),
        );
        return reply.send({
          tenantId,
          status: s.status,
          phase: s.termination?.phase ?? null,
          startedAt: s.termination?.startedAt ?? null,
        });
      },
    );

    // a scope of its own: the raw-body parser must not replace the JSON parser of the routes above
    await app.register(webhookRoutes(kernel));
  },
});
