import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { notifyErrors } from '../../domain/notify/errors';
import { AcceptedView, ChannelView, TemplateView } from '../../domain/notify/views';
import { commonErrors } from '../../domain/shared/errors';
import { channelDestinationProblems, registerChannel } from '../../commands/notify/channels';
import type { PreparedNotification } from '../../commands/notify/compose';
import { composeNotifications } from '../../commands/notify/compose';
import { notifyContext } from '../../commands/notify/context';
import type { ChannelAdapter } from '../../commands/notify/channels/adapter';
import { installNotifyPort } from '../../commands/notify/port';
import { acceptorOf, queueInUnit } from '../../commands/notify/queue';
import { retryNotification } from '../../commands/notify/retry';
import { createTemplate } from '../../commands/notify/templates';
import { executeCommand, requestMeta } from '../../infra/http/commands';
import type { Kernel } from '../../infra/kernel';
import { defineRoutes } from '../../infra/modules';
import { jsonBody } from '../../infra/http/operation-docs';
import {
  BATCH_MAX,
  BatchBody,
  ChannelBody,
  PushSubscriptionBody,
  SendBody,
  sendRequestOf,
  TemplateBody,
} from './schemas';
import { callerOf } from '../../infra/http/auth';

const Id = z.uuid({ message: 'must be a UUID' });

/** the body of POST /notify/channels as the documents show it: one shape per installed type, its config the adapter's */
const channelBodies = (adapters: readonly ChannelAdapter[]): z.ZodType => {
  const [first, ...rest] = adapters.map((a) =>
    ChannelBody.extend({ type: z.literal(a.type).describe('an installed adapter type'), config: a.config }),
  );
  return first && rest.length ? z.discriminatedUnion('type', [first, ...rest]) : (first ?? ChannelBody);
};
const optional = { idempotency: 'optional' } as const;

/**
 * Queues what was composed: with an Idempotency-Key in the command's own transaction (the answer
 * stored with it and replayed), without one through the group commit of accepts.
 */
const accept = async <T>(
  kernel: Kernel,
  request: FastifyRequest,
  reply: FastifyReply,
  prepared: PreparedNotification[],
  answer: (a: AcceptedView[]) => T,
): Promise<void> => {
  if (request.headers['idempotency-key'] !== undefined) {
    return executeCommand(kernel, request, reply, { status: 202, ...optional }, async (uow) =>
      answer(await queueInUnit(kernel, uow, prepared)),
    );
  }
  const accepted = await acceptorOf(kernel).submit(requestMeta(request), prepared);
  await reply.code(202).send(answer(accepted));
};

/** spec 002: over 500 recipients is 400 batch-limit-exceeded (not a generic validation error) */
const batchLimit = async (request: FastifyRequest): Promise<void> => {
  const recipients = (request.body as { recipients?: unknown } | undefined)?.recipients;
  if (Array.isArray(recipients) && recipients.length > BATCH_MAX)
    throw notifyErrors.batchLimitExceeded(BATCH_MAX, recipients.length);
};

/** sending and the tenant's templates and channels are its data: refused while suspended */
const send = { access: 'permission', permission: 'notify.send', whileSuspended: 'refused', ...optional } as const;
const manage = { access: 'permission', permission: 'notify.manage', whileSuspended: 'refused', ...optional } as const;
/** a person's own browser subscription is not the tenant's data (unsubscribing above all must work) */
const ownDevice = { access: 'bearer', whileSuspended: 'allowed' } as const;

export default defineRoutes({
  namespace: 'notify',
  permissions: {
    'notify.send': 'send notifications, alone or in batches, and retry failed ones',
    'notify.read': 'read the notification history, templates and channels',
    'notify.manage': 'create templates and register channels',
  },
  async start(kernel) {
    notifyContext(kernel);
    installNotifyPort(kernel);
  },
  register(app, kernel) {
    const r = app.withTypeProvider<ZodTypeProvider>();
    const ctx = () => notifyContext(kernel);

    r.post(
      '/notify',
      {
        config: { ...send, problems: [404, 503] },
        schema: { summary: 'Queue a notification (202)', body: SendBody, response: { 202: AcceptedView } },
      },
      async (request, reply) => {
        const prepared = await composeNotifications(kernel, ctx(), callerOf(request).tenantId, [
          sendRequestOf(request.body, callerOf(request).source ?? null),
        ]);
        return accept(kernel, request, reply, prepared, (a) => a[0]!);
      },
    );

    r.post(
      '/notify/batch',
      {
        config: { ...send, problems: [404, 503] },
        preValidation: batchLimit,
        schema: {
          summary: `Queue one notification per recipient, at most ${BATCH_MAX} (202)`,
          body: BatchBody,
          response: { 202: z.object({ ids: z.array(z.string()), count: z.number().int() }) },
        },
      },
      async (request, reply) => {
        const b = request.body;
        const requests = b.recipients.map(({ variables, ...recipient }) =>
          sendRequestOf(
            { ...b, recipient, variables: { ...b.variables, ...variables } },
            callerOf(request).source ?? null,
          ),
        );
        const prepared = await composeNotifications(
          kernel,
          ctx(),
          callerOf(request).tenantId,
          requests,
          (i) => `recipients[${i}].`,
        );
        return accept(kernel, request, reply, prepared, (a) => ({
          ids: a.map((x) => x.notificationId),
          count: a.length,
        }));
      },
    );

    r.post(
      '/notify/:id/retry',
      {
        config: { ...send, problems: [404, 503] },
        schema: {
          summary: 'Queue a failed notification again (202)',
          params: z.object({ id: Id }),
          response: { 202: z.object({ notificationId: z.string(), status: z.literal('queued') }) },
        },
      },
      (request, reply) =>
        executeCommand(kernel, request, reply, { status: 202, ...optional }, (uow) =>
          retryNotification(kernel, uow, request.params.id, callerOf(request).source ?? null),
        ),
    );

    r.post(
      '/notify/templates',
      {
        config: { ...manage, problems: [404, 409] },
        schema: { summary: 'Create a template', body: TemplateBody, response: { 201: TemplateView } },
      },
      (request, reply) =>
        executeCommand(kernel, request, reply, { status: 201, ...optional }, (uow) =>
          createTemplate(uow, ctx(), request.body),
        ),
    );

    r.post(
      '/notify/channels',
      {
        config: {
          ...manage,
          problems: [409],
          // the types are the adapters installed when the document is made (modules add theirs at start), each with its config
          openapi: () => ({ requestBody: jsonBody(channelBodies([...ctx().adapters.values()])) }),
        },
        schema: {
          summary: 'Register a channel (an instance of an installed adapter type)',
          body: ChannelBody,
          response: { 201: ChannelView },
        },
      },
      async (request, reply) => {
        // the URLs a channel names are resolved before the command's transaction opens
        const refused = await channelDestinationProblems(ctx(), request.body);
        return executeCommand(kernel, request, reply, { status: 201, ...optional }, (uow) =>
          registerChannel(uow, ctx(), request.body, refused),
        );
      },
    );

    r.post(
      '/notify/push/subscriptions',
      {
        config: ownDevice,
        schema: {
          summary: 'Register a browser push subscription (PushSubscription.toJSON()) of the caller',
          body: PushSubscriptionBody,
          response: { 201: z.object({ endpoint: z.string(), createdAt: z.string() }) },
        },
      },
      async (request, reply) => {
        const p = callerOf(request);
        // the push service is a server the caller names: a public address (checked again on every connection)
        const refused = await kernel.outbound.urlProblem('endpoint', request.body.endpoint);
        if (refused) throw commonErrors.validation([refused]);
        const createdAt = ctx().clock.now();
        // a browser profile has one subscription per endpoint: whoever subscribes it last receives on it
        await kernel.db.query(
          `INSERT INTO notify.push_subscriptions (tenant_id, endpoint, user_id, p256dh, auth, created_at) VALUES ($1, $2, $3, $4, $5, $6)
        ON CONFLICT (tenant_id, endpoint) DO UPDATE SET user_id = EXCLUDED.user_id, p256dh = EXCLUDED.p256dh, auth = EXCLUDED.auth, created_at = EXCLUDED.created_at`,
          [p.tenantId, request.body.endpoint, p.userId, request.body.keys.p256dh, request.body.keys.auth, createdAt],
        );
        return reply.code(201).send({ endpoint: request.body.endpoint, createdAt: createdAt.toISOString() });
      },
    );

    r.delete(
      '/notify/push/subscriptions',
      {
        config: ownDevice,
        schema: {
          summary: "Remove one of the caller's push subscriptions",
          querystring: z.object({ endpoint: z.string().min(1).max(2048) }),
          response: { 204: z.null() },
        },
      },
      async (request, reply) => {
        const p = callerOf(request);
        const { rowCount } = await kernel.db.query(
          'DELETE FROM notify.push_subscriptions WHERE tenant_id = $1 AND endpoint = $2 AND user_id = $3',
          [p.tenantId, request.query.endpoint, p.userId],
        );
        if (!rowCount) throw commonErrors.notFound('The caller has no push subscription with this endpoint.');
        return reply.code(204).send(null);
      },
    );
  },
});
