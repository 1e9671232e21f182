import type { FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { JsonObject } from '../../domain/shared/json';
import { anonymizeUser } from '../../commands/audit/anonymize';
import { auditErrors } from '../../domain/audit/errors';
import { ACTION, isReservedAction } from '../../domain/audit/filters';
import { commonErrors } from '../../domain/shared/errors';
import { auditRecord } from '../../infra/audit';
import { requestMeta } from '../../infra/http/commands';
import { multiStatusSchema, sendMultiStatus, settleItems } from '../../infra/http/multi-status';
import { jsonSchemaOf } from '../../infra/http/operation-docs';
import type { Kernel } from '../../infra/kernel';
import { defineRoutes } from '../../infra/services';
import { registerExport } from './export';

export const BATCH_LIMIT = 500;
const JSON_MEMBER_LIMIT = 65_536;

const Member = JsonObject.nullable()
  .optional()
  .refine(
    (v) => v == null || JSON.stringify(v).length <= JSON_MEMBER_LIMIT,
    `at most ${JSON_MEMBER_LIMIT} bytes of JSON`,
  );
/**
 * spec 002 POST /audit: the client says what happened to which entity; who, from where, for which
 * tenant, when and under which trace come from the request (actor fields in a body are ignored).
 */
export const AuditRecordBody = z.object({
  action: z
    .string()
    .max(128)
    .regex(ACTION, 'must be domain.entity.verb, such as invoice.payment.captured')
    .refine((a) => !isReservedAction(a), 'audit.* actions are recorded by the audit service itself'),
  entityType: z.string().min(1).max(64),
  entityId: z.string().min(1).max(256),
  before: Member,
  after: Member,
  meta: Member,
});
type AuditRecordBody = z.infer<typeof AuditRecordBody>;

const Queued = z.object({ auditId: z.string(), status: z.literal('queued'), createdAt: z.string() });
const Anonymization = z.object({
  anonymizationId: z.string(),
  userId: z.string(),
  status: z.enum(['pending', 'completed']),
  createdAt: z.string(),
});

/** who records: from the verified principal and the request only */
const actorOf = (request: FastifyRequest) => {
  const meta = requestMeta(request);
  const userAgent = request.headers['user-agent'];
  return {
    tenantId: meta.tenantId,
    actorId: meta.actorId ?? 'anonymous',
    actorIp: request.clientAddress || request.ip,
    actorUserAgent: typeof userAgent === 'string' ? userAgent.slice(0, 512) : null,
    traceId: request.id,
  };
};

/**
 * hands the record to the audit pipeline and answers once it is durable (on the log, or staged in
 * the audit outbox): a 202 is never given for a record a crash could lose (spec 002: never lost)
 */
const queue = async (kernel: Kernel, request: FastifyRequest, bodies: AuditRecordBody[]) => {
  const createdAt = kernel.clock.now().toISOString();
  const queued = bodies.map((body) => {
    const auditId = kernel.ids.next();
    return {
      answer: { auditId, status: 'queued' as const, createdAt },
      record: auditRecord({ ...actorOf(request), ...body, timestamp: createdAt }, auditId),
    };
  });
  // together: a batch's records travel in one publish
  await Promise.all(queued.map((q) => kernel.audit.record(q.record)));
  return queued.map((q) => q.answer);
};

const fieldErrors = (error: z.ZodError, prefix: string) =>
  error.issues.map((i) => ({
    field: [prefix, ...i.path.map(String)].filter(Boolean).join('.'),
    message: i.message,
    code: i.code.toUpperCase(),
  }));

export default defineRoutes({
  namespace: 'audit',
  permissions: {
    'audit.read': 'read audit records (GET /audit, /audit/:id, /audit/entity-history)',
    'audit.export': 'export audit records and read export jobs',
    'audit.anonymize': 'anonymize a user in the audit log (overlay)',
  },
  register(app, kernel) {
    const r = app.withTypeProvider<ZodTypeProvider>();

    r.post(
      '/audit',
      {
        // spec 002: 202 always — a suspended tenant's records are accepted too
        config: { whileSuspended: 'allowed' },
        schema: { body: AuditRecordBody, response: { 202: Queued } },
      },
      async (request, reply) => {
        const [queued] = await queue(kernel, request, [request.body]);
        return reply.code(202).send(queued!);
      },
    );

    r.post(
      '/audit/batch',
      {
        config: { whileSuspended: 'allowed' },
        schema: {
          // records are checked one by one (each its own outcome); the document shows what each must be
          body: z.object({
            records: z
              .array(z.unknown())
              .describe(`at most ${BATCH_LIMIT} bodies of POST /audit`)
              .meta({ items: jsonSchemaOf(AuditRecordBody), maxItems: BATCH_LIMIT }),
          }),
          response: {
            202: multiStatusSchema(Queued).describe('every record queued'),
            207: multiStatusSchema(Queued).describe('some records refused: each result has its status and a problem'),
          },
        },
      },
      async (request, reply) => {
        const { records } = request.body;
        if (records.length > BATCH_LIMIT) throw auditErrors.batchLimitExceeded(BATCH_LIMIT, records.length);
        const checked = await settleItems(records, async (item) => {
          const parsed = AuditRecordBody.safeParse(item);
          if (!parsed.success) throw commonErrors.validation(fieldErrors(parsed.error, ''), 'The record is not valid.');
          return parsed.data;
        });
        const answers = await queue(
          kernel,
          request,
          checked.flatMap((c) => (c.ok ? [c.data] : [])),
        );
        const outcomes = checked.map((c) => (c.ok ? { ok: true as const, data: answers.shift()! } : c));
        return sendMultiStatus(request, reply, kernel.config.problemsBaseUrl, outcomes, 202);
      },
    );

    r.post(
      '/audit/anonymize',
      {
        // erasing a person's data is owed whatever the subscription's state; 404: a user the tenant does not know
        config: { access: 'permission', permission: 'audit.anonymize', whileSuspended: 'allowed', problems: [404] },
        schema: { body: z.object({ userId: z.string().min(1).max(128) }), response: { 202: Anonymization } },
      },
      async (request, reply) =>
        reply.code(202).send(await anonymizeUser(kernel, actorOf(request), request.body.userId)),
    );

    registerExport(app, kernel);
  },
});
