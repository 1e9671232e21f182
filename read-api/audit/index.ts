import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Overlay } from '../../domain/audit/anonymization';
import { OVERLAY_KEY_PURPOSE, overlayOf, redact } from '../../domain/audit/anonymization';
import { auditErrors } from '../../domain/audit/errors';
import { ExportJob, exportFormat, jobView } from '../../domain/audit/export';
import { actionFilter, AuditTenantChoice, Instant, tenantOf } from '../../domain/audit/filters';
import { AuditRecordView } from '../../domain/audit/record';
import type { AuditRow } from '../../domain/audit/rows';
import { isoOf, viewOf } from '../../domain/audit/rows';
import { callerOf } from '../../infra/http/auth';
import { decodeCursor, pageEnvelope, pageQuery, toPage } from '../../infra/http/pagination';
import type { Kernel } from '../../infra/kernel';
import { defineRoutes } from '../../infra/services';
import { fileAnswer, jsonSchemaOf } from '../../infra/http/operation-docs';
import { hmacSha256Hex } from '../../infra/security/digest';
import { anonymizationRules, findExportJob, findRecord, listRecords } from '../../projections/audit/queries';

const TenantChoice = AuditTenantChoice;
const read = { access: 'permission', permission: 'audit.read' } as const;
const exporting = { access: 'permission', permission: 'audit.export' } as const;

/** the tenant's overlay: every anonymization requested, pending or completed (reads hide at once) */
const loadOverlay = async (kernel: Kernel, tenantId: string): Promise<Overlay | null> =>
  overlayOf(
    await anonymizationRules(kernel.db, tenantId),
    hmacSha256Hex(kernel.engines.secrets.key(OVERLAY_KEY_PURPOSE)),
  );

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
    await kernel
      .analytics()
      .catch((error: unknown) =>
        kernel.logger.warn({ err: error }, 'ClickHouse is unavailable; audit reads fail until it is back'),
      );
  },
  register(app, kernel) {
    const r = app.withTypeProvider<ZodTypeProvider>();

    r.get(
      '/audit',
      {
        config: read,
        schema: {
          querystring: z.object({
            ...pageQuery,
            action: z.string().max(128).optional().describe('exact, or a prefix such as money.*'),
            entityType: z.string().max(64).optional(),
            entityId: z.string().max(256).optional(),
            actorId: z.string().max(256).optional(),
            since: Instant.optional().describe('inclusive'),
            until: Instant.optional().describe('exclusive'),
            tenantId: TenantChoice,
          }),
          response: { 200: pageEnvelope(AuditRecordView) },
        },
      },
      async (request) => {
        const q = request.query;
        const tenantId = tenantOf(callerOf(request), q.tenantId);
        const filter = {
          action: actionFilter(q.action),
          entityType: q.entityType,
          entityId: q.entityId,
          actorId: q.actorId,
          since: q.since ? new Date(q.since) : undefined,
          until: q.until ? new Date(q.until) : undefined,
        };
        const rows = await listRecords(await kernel.analytics(), tenantId, {
          filter,
          after: afterOf(q.page_token),
          limit: q.page_size + 1,
          order: 'newest',
        });
        return page(kernel, tenantId, rows, q.page_size);
      },
    );

    r.get(
      '/audit/entity-history',
      {
        config: read,
        schema: {
          querystring: z.object({
            ...pageQuery,
            entityType: z.string().min(1).max(64),
            entityId: z.string().min(1).max(256),
            since: Instant.optional().describe('inclusive'),
            tenantId: TenantChoice,
          }),
          response: { 200: pageEnvelope(AuditRecordView) },
        },
      },
      async (request) => {
        const q = request.query;
        const tenantId = tenantOf(callerOf(request), q.tenantId);
        const filter = {
          entityType: q.entityType,
          entityId: q.entityId,
          since: q.since ? new Date(q.since) : undefined,
        };
        const rows = await listRecords(await kernel.analytics(), tenantId, {
          filter,
          after: afterOf(q.page_token),
          limit: q.page_size + 1,
          order: 'oldest',
        });
        return page(kernel, tenantId, rows, q.page_size);
      },
    );

    r.get(
      '/audit/export/jobs/:jobId',
      {
        config: exporting,
        schema: {
          params: z.object({ jobId: z.uuid() }),
          querystring: z.object({ tenantId: TenantChoice }),
          response: { 200: ExportJob },
        },
      },
      async (request) => {
        const job = await findExportJob(
          kernel.db,
          tenantOf(callerOf(request), request.query.tenantId),
          request.params.jobId,
        );
        if (!job) throw auditErrors.exportJobNotFound();
        return jobView(job);
      },
    );

    r.get(
      '/audit/export/jobs/:jobId/file',
      {
        config: {
          ...exporting,
          openapi: {
            responses: fileAnswer("the completed job's file (json: one array; csv: RFC 4180 with a header line)", {
              'application/json': jsonSchemaOf(z.array(AuditRecordView), 'output'),
              'text/csv': { type: 'string' },
            }),
          },
        },
        schema: { params: z.object({ jobId: z.uuid() }), querystring: z.object({ tenantId: TenantChoice }) },
      },
      async (request, reply) => {
        const job = await findExportJob(
          kernel.db,
          tenantOf(callerOf(request), request.query.tenantId),
          request.params.jobId,
        );
        if (!job) throw auditErrors.exportJobNotFound();
        if (job.status !== 'completed' || !job.object_key) throw auditErrors.exportJobNotReady(job.status);
        const f = exportFormat(job.format);
        const view = jobView(job);
        const name = `audit-${view.since.slice(0, 10)}-${view.until.slice(0, 10)}.${f.extension}`;
        return reply
          .code(200)
          .type(f.contentType)
          .header('content-disposition', `attachment; filename="${name}"`)
          .send(await kernel.engines.objects.get(job.object_key));
      },
    );

    r.get(
      '/audit/:id',
      {
        config: read,
        schema: {
          params: z.object({ id: z.string().min(1).max(128) }),
          querystring: z.object({ tenantId: TenantChoice }),
          response: { 200: AuditRecordView },
        },
      },
      async (request) => {
        const tenantId = tenantOf(callerOf(request), request.query.tenantId);
        const row = await findRecord(await kernel.analytics(), tenantId, request.params.id);
        if (!row) throw auditErrors.recordNotFound();
        return redact(viewOf(row), await loadOverlay(kernel, tenantId));
      },
    );
  },
});
