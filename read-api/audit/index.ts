import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { loadOverlay } from '../../commands/audit/anonymize';
import { anonymizationsSettled, createExportJob, findExportJob, streamHotExport } from '../../commands/audit/exports';
import { redact } from '../../domain/audit/anonymization';
import { auditErrors } from '../../domain/audit/errors';
import { exportFormat, planExport } from '../../domain/audit/export';
import { actionFilter } from '../../domain/audit/filters';
import { AuditRecordView } from '../../domain/audit/record';
import type { AuditRow } from '../../projections/audit/rows';
import { isoOf, viewOf } from '../../projections/audit/rows';
import { PLATFORM_WILDCARD } from '../../domain/shared/permissions';
import { decodeCursor, pageEnvelope, pageQuery, toPage } from '../../infra/http/pagination';
import type { Kernel } from '../../infra/kernel';
import { defineRoutes } from '../../infra/modules';
import { findRecord, listRecords } from '../../projections/audit/queries';

const Instant = z.iso.datetime({ offset: true, message: 'must be an ISO 8601 timestamp' });
const TenantChoice = z.string().min(1).max(128).optional().describe('the platform owner only: the tenant to read (ignored for anyone else)');
const read = { access: 'permission', permission: 'audit.read' } as const;
const exporting = { access: 'permission', permission: 'audit.export' } as const;
/** longest wait of an export for a pending anonymization (under the gateway's upstream deadline) */
const ANONYMIZATION_WAIT_MS = 3000;

const ExportJob = z.object({
  jobId: z.string(), status: z.enum(['queued', 'running', 'completed', 'failed']), format: z.enum(['json', 'csv']), since: z.string(), until: z.string(),
  records: z.number().nullable(), error: z.string().nullable(), createdAt: z.string(), completedAt: z.string().nullable(),
});

/** the tenant a request reads: its own, or — for the platform owner only — the one it names */
const tenantOf = (request: FastifyRequest, named: string | undefined): string => {
  const p = request.principal!;
  return named !== undefined && p.permissions.has(PLATFORM_WILDCARD) ? named : p.tenantId;
};

const keysetOf = (row: AuditRow) => ({ t: isoOf(row.timestamp), id: row.id });
const afterOf = (token: string | undefined) => {
  const c = decodeCursor(token, ['t', 'id']);
  return c ? { timestamp: String(c.t), id: String(c.id) } : undefined;
};

const page = async (kernel: Kernel, tenantId: string, rows: AuditRow[], size: number) => {
  const overlay = await loadOverlay(kernel, tenantId);
  return toPage(rows, size, (row) => redact(viewOf(row), overlay), keysetOf);
};

export default defineRoutes({
  namespace: 'audit',
  async start(kernel) {
    // open ClickHouse and apply its migrations before the first request; a ClickHouse that is down
    // must not keep the other services of this process from becoming ready (reads retry it)
    await kernel.analytics().catch((error: unknown) => kernel.logger.warn({ err: error }, 'ClickHouse is unavailable; audit reads fail until it is back'));
  },
  register(app, kernel) {
    const r = app.withTypeProvider<ZodTypeProvider>();

    r.get('/audit', {
      config: read,
      schema: {
        querystring: z.object({
          ...pageQuery, action: z.string().max(128).optional().describe('exact, or a prefix such as money.*'), entityType: z.string().max(64).optional(),
          entityId: z.string().max(256).optional(), actorId: z.string().max(256).optional(),
          since: Instant.optional().describe('inclusive'), until: Instant.optional().describe('exclusive'), tenantId: TenantChoice,
        }),
        response: { 200: pageEnvelope(AuditRecordView) },
      },
    }, async (request) => {
      const q = request.query;
      const tenantId = tenantOf(request, q.tenantId);
      const filter = {
        action: actionFilter(q.action), entityType: q.entityType, entityId: q.entityId, actorId: q.actorId,
        since: q.since ? new Date(q.since) : undefined, until: q.until ? new Date(q.until) : undefined,
      };
      const rows = await listRecords(await kernel.analytics(), tenantId, { filter, after: afterOf(q.page_token), limit: q.page_size + 1, order: 'newest' });
      return page(kernel, tenantId, rows, q.page_size);
    });

    r.get('/audit/entity-history', {
      config: read,
      schema: {
        querystring: z.object({
          ...pageQuery, entityType: z.string().min(1).max(64), entityId: z.string().min(1).max(256), since: Instant.optional().describe('inclusive'), tenantId: TenantChoice,
        }),
        response: { 200: pageEnvelope(AuditRecordView) },
      },
    }, async (request) => {
      const q = request.query;
      const tenantId = tenantOf(request, q.tenantId);
      const filter = { entityType: q.entityType, entityId: q.entityId, since: q.since ? new Date(q.since) : undefined };
      const rows = await listRecords(await kernel.analytics(), tenantId, { filter, after: afterOf(q.page_token), limit: q.page_size + 1, order: 'oldest' });
      return page(kernel, tenantId, rows, q.page_size);
    });

    r.get('/audit/export', {
      config: exporting,
      schema: {
        querystring: z.object({ format: z.enum(['json', 'csv']).default('json'), since: Instant, until: Instant, tenantId: TenantChoice }),
        response: { 202: ExportJob.extend({ code: z.literal('cold-export-initiated'), statusUrl: z.string() }) },
      },
    }, async (request, reply) => {
      const q = request.query;
      const range = { tenantId: tenantOf(request, q.tenantId), since: new Date(q.since), until: new Date(q.until) };
      const plan = planExport({ ...range, now: kernel.clock.now(), hotDays: kernel.config.AUDIT_HOT_DAYS });
      if (plan === 'cold') {
        const job = await createExportJob(kernel, range, q.format, request.principal!.userId);
        const statusUrl = `/v1/audit/export/jobs/${job.jobId}`;
        return reply.code(202).header('location', statusUrl).send({ ...job, code: 'cold-export-initiated' as const, statusUrl });
      }
      if (!(await anonymizationsSettled(kernel, range.tenantId, ANONYMIZATION_WAIT_MS))) throw auditErrors.anonymizationPending();
      const f = exportFormat(q.format);
      const name = `audit-${range.since.toISOString().slice(0, 10)}-${range.until.toISOString().slice(0, 10)}.${f.extension}`;
      // the file itself: a stream, outside the 202's JSON schema
      return (reply as FastifyReply).code(200).type(f.contentType).header('content-disposition', `attachment; filename="${name}"`)
        .send(await streamHotExport(kernel, range, q.format));
    });

    r.get('/audit/export/jobs/:jobId', {
      config: exporting,
      schema: { params: z.object({ jobId: z.uuid() }), querystring: z.object({ tenantId: TenantChoice }), response: { 200: ExportJob } },
    }, async (request) => {
      const job = await findExportJob(kernel, tenantOf(request, request.query.tenantId), request.params.jobId);
      if (!job) throw auditErrors.exportJobNotFound();
      const { objectKey: _key, ...view } = job;
      return view;
    });

    r.get('/audit/export/jobs/:jobId/file', {
      config: exporting,
      schema: { params: z.object({ jobId: z.uuid() }), querystring: z.object({ tenantId: TenantChoice }) },
    }, async (request, reply) => {
      const job = await findExportJob(kernel, tenantOf(request, request.query.tenantId), request.params.jobId);
      if (!job) throw auditErrors.exportJobNotFound();
      if (job.status !== 'completed' || !job.objectKey) throw auditErrors.exportJobNotReady(job.status);
      const f = exportFormat(job.format);
      const name = `audit-${job.since.slice(0, 10)}-${job.until.slice(0, 10)}.${f.extension}`;
      return reply.code(200).type(f.contentType).header('content-disposition', `attachment; filename="${name}"`)
        .send(await kernel.engines.objects.get(job.objectKey));
    });

    r.get('/audit/:id', {
      config: read,
      schema: { params: z.object({ id: z.string().min(1).max(128) }), querystring: z.object({ tenantId: TenantChoice }), response: { 200: AuditRecordView } },
    }, async (request) => {
      const tenantId = tenantOf(request, request.query.tenantId);
      const row = await findRecord(await kernel.analytics(), tenantId, request.params.id);
      if (!row) throw auditErrors.recordNotFound();
      return redact(viewOf(row), await loadOverlay(kernel, tenantId));
    });
  },
});
