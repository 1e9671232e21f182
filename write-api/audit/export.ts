import type { FastifyInstance, FastifyReply } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { anonymizationsSettled, createExportJob, streamHotExport } from '../../commands/audit/exports';
import { auditErrors } from '../../domain/audit/errors';
import { ExportJob, exportFormat, planExport } from '../../domain/audit/export';
import { AuditTenantChoice, Instant, tenantOf } from '../../domain/audit/filters';
import { callerOf } from '../../infra/http/auth';
import type { Kernel } from '../../infra/kernel';
import { AuditRecordView } from '../../domain/audit/record';
import { fileAnswer, jsonSchemaOf } from '../../infra/http/operation-docs';

/** longest wait of an export for a pending anonymization (under the gateway's upstream deadline) */
const ANONYMIZATION_WAIT_MS = 3000;

/**
 * GET /audit/export (spec 002): a range within the hot store is the file, streamed; a range
 * reaching further back is a job (202 cold-export-initiated) the worker restores from the cold
 * archives. A GET that may create a job: the write API serves it (in the split deployment the
 * gateway forwards it there, like identity's provider callback); the job's status and file are
 * reads (read-api/audit).
 */
export const registerExport = (app: FastifyInstance, kernel: Kernel): void => {
  app.withTypeProvider<ZodTypeProvider>().get(
    '/audit/export',
    {
      config: {
        access: 'permission',
        permission: 'audit.export',
        openapi: {
          responses: {
            ...fileAnswer(
              'a range within the hot store: the file (format=json one array, format=csv RFC 4180 with a header line)',
              {
                'application/json': jsonSchemaOf(z.array(AuditRecordView), 'output'),
                'text/csv': { type: 'string' },
              },
            ),
            202: {
              description: 'a range reaching the cold archives: an export job',
              headers: { Location: { description: 'the job (statusUrl)', required: true, schema: { type: 'string' } } },
            },
          },
        },
      },
      schema: {
        querystring: z.object({
          format: z.enum(['json', 'csv']).default('json'),
          since: Instant,
          until: Instant,
          tenantId: AuditTenantChoice,
        }),
        response: { 202: ExportJob.extend({ code: z.literal('cold-export-initiated'), statusUrl: z.string() }) },
      },
    },
    async (request, reply) => {
      const q = request.query;
      const range = {
        tenantId: tenantOf(callerOf(request), q.tenantId),
        since: new Date(q.since),
        until: new Date(q.until),
      };
      const plan = planExport({ ...range, now: kernel.clock.now(), hotDays: kernel.config.AUDIT_HOT_DAYS });
      if (plan === 'cold') {
        const job = await createExportJob(kernel, range, q.format, callerOf(request).userId);
        const statusUrl = `/v1/audit/export/jobs/${job.jobId}`;
        return reply
          .code(202)
          .header('location', statusUrl)
          .send({ ...job, code: 'cold-export-initiated' as const, statusUrl });
      }
      if (!(await anonymizationsSettled(kernel, range.tenantId, ANONYMIZATION_WAIT_MS)))
        throw auditErrors.anonymizationPending();
      const f = exportFormat(q.format);
      const name = `audit-${range.since.toISOString().slice(0, 10)}-${range.until.toISOString().slice(0, 10)}.${f.extension}`;
      // the file itself: a stream, outside the 202's JSON schema
      return (reply as FastifyReply)
        .code(200)
        .type(f.contentType)
        .header('content-disposition', `attachment; filename="${name}"`)
        .send(await streamHotExport(kernel, range, q.format));
    },
  );
};
