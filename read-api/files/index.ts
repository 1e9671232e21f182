import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { BUCKETS, FILE_STATUSES } from '../../domain/files/constants';
import { filesErrors } from '../../domain/files/errors';
import { DEFAULT_LINK_TTL_SECONDS, isLinkVariant, MAX_LINK_TTL_SECONDS } from '../../domain/files/links';
import { FileView, JobView } from '../../domain/files/views';
import { Instant } from '../../infra/http/instant';
import { decodeCursor, pageEnvelope, pageQuery, toPage } from '../../infra/http/pagination';
import { defineRoutes } from '../../infra/modules';
import { downloadAnswers, redirectAnswer } from '../../infra/http/operation-docs';
import { readLinks } from '../../projections/files/links';
import { availableFile, fileView, findFile, findJob, listFiles, storageBytes } from '../../projections/files/queries';
import { sendObject } from './content';
import { callerOf, type Principal } from '../../infra/http/auth';

const Id = z.uuid({ message: 'must be a UUID' });
const IdParams = z.object({ id: Id });
const read = { access: 'permission', permission: 'files.read' } as const;
const FileCursor = z.object({
  c: Instant,
  id: z
    .string()
    .min(1)
    .max(64)
    .regex(/^[0-9a-zA-Z-]+$/),
});
const Flag = z
  .enum(['1', 'true', '0', 'false'])
  .optional()
  .transform((v) => v === '1' || v === 'true');
const Redirect = z.null().describe('302: Location is a short-lived signed link (GET it without a token)');

export default defineRoutes({
  namespace: 'files',
  register(app, kernel) {
    const r = app.withTypeProvider<ZodTypeProvider>();
    const links = readLinks(kernel);
    const objects = kernel.engines.objects;
    const tenantOf = (request: { principal?: Principal }) => callerOf(request).tenantId;

    r.get(
      '/files',
      {
        config: read,
        schema: {
          querystring: z.object({
            ...pageQuery,
            bucket: z.enum(BUCKETS).optional(),
            status: z.enum(FILE_STATUSES).optional(),
            uploadedBy: z.string().min(1).max(128).optional(),
          }),
          response: { 200: pageEnvelope(FileView) },
        },
      },
      async (request) => {
        const q = request.query;
        const after = decodeCursor(q.page_token, FileCursor);
        const rows = await listFiles(kernel.db, tenantOf(request), {
          bucket: q.bucket,
          status: q.status,
          uploadedBy: q.uploadedBy,
          after: after ? { createdAt: after.c, id: after.id } : undefined,
          limit: q.page_size + 1,
        });
        const link = links.linker(tenantOf(request));
        return toPage(
          rows,
          q.page_size,
          (row) => fileView(row, link),
          (row) => ({ c: row.created_at.toISOString(), id: row.id }),
        );
      },
    );

    r.get(
      '/files/usage',
      {
        config: read,
        schema: {
          summary: 'Bytes the tenant stores (available files and the trash; thumbnails not counted)',
          response: { 200: z.object({ storageBytes: z.number().int() }) },
        },
      },
      async (request) => ({ storageBytes: await storageBytes(kernel.db, tenantOf(request)) }),
    );

    r.get(
      '/files/:id',
      {
        config: {
          ...read,
          problems: [416, 422],
          openapi: {
            responses: {
              ...downloadAnswers('download=1'),
              200: {
                ...downloadAnswers('download=1')[200],
                description: 'meta=1: the File object (JSON); download=1: the bytes, as an attachment',
              },
              ...redirectAnswer(
                'without download or meta: Location is a short-lived signed link (GET it without a token)',
              ),
            },
          },
        },
        schema: {
          summary:
            'The file: 302 to a signed link; download=1 the bytes as an attachment (Range supported); meta=1 the File object',
          params: IdParams,
          querystring: z.object({ download: Flag, meta: Flag }),
          response: {
            200: FileView.describe(
              "meta=1: the File object; download=1: the bytes (application/octet-stream or the file's type)",
            ),
            302: Redirect,
          },
        },
      },
      async (request, reply) => {
        const tenantId = tenantOf(request);
        const row = await availableFile(kernel.db, tenantId, request.params.id);
        if (request.query.meta) return fileView(row, links.linker(tenantId));
        if (request.query.download) {
          return sendObject(reply, objects, {
            key: row.object_key,
            mimeType: row.mime_type,
            name: row.original_name,
            disposition: 'attachment',
            range: request.headers.range,
            maxAgeSeconds: 0,
          });
        }
        return reply.redirect(links.linker(tenantId)(row.id, 'original'), 302);
      },
    );

    r.get(
      '/files/:id/url',
      {
        config: { ...read, problems: [422] },
        schema: {
          params: IdParams,
          querystring: z.object({
            ttlSeconds: z.coerce
              .number()
              .int()
              .min(1)
              .max(MAX_LINK_TTL_SECONDS)
              .default(DEFAULT_LINK_TTL_SECONDS)
              .meta({ type: 'integer', minimum: 1, maximum: MAX_LINK_TTL_SECONDS, default: DEFAULT_LINK_TTL_SECONDS }),
          }),
          response: { 200: z.object({ url: z.string(), expiresAt: z.string() }) },
        },
      },
      async (request) => {
        const tenantId = tenantOf(request);
        const row = await availableFile(kernel.db, tenantId, request.params.id);
        const ttl = request.query.ttlSeconds;
        return {
          url: links.linker(tenantId, ttl)(row.id, 'original'),
          expiresAt: new Date(links.expiry(ttl) * 1000).toISOString(),
        };
      },
    );

    r.get(
      '/files/:id/jobs/:jobId',
      {
        config: read,
        schema: { params: z.object({ id: Id, jobId: Id }), response: { 200: JobView } },
      },
      async (request) => {
        const job = await findJob(kernel.db, tenantOf(request), request.params.id, request.params.jobId);
        if (!job) throw filesErrors.jobNotFound();
        return job;
      },
    );

    // the signed links: no token, the signature is the permission (domain/files/links.ts)
    r.get(
      '/files/:id/content',
      {
        config: {
          access: 'public',
          problems: [403, 416],
          openapi: { responses: downloadAnswers('the file or its thumbnail') },
        },
        schema: {
          summary: 'The bytes behind a signed link (Range supported)',
          params: IdParams,
          querystring: z.object({
            tenant: z.string().min(1).max(128),
            variant: z.string().max(32).default('original'),
            expires: z.coerce.number().int().min(0).meta({ type: 'integer' }),
            signature: z.string().max(128),
          }),
        },
      },
      async (request, reply) => {
        const q = request.query;
        const link = {
          tenantId: q.tenant,
          fileId: request.params.id,
          variant: isLinkVariant(q.variant) ? q.variant : ('original' as const),
          expires: q.expires,
        };
        const check = isLinkVariant(q.variant)
          ? links.verify(link, q.signature)
          : { valid: false as const, reason: 'bad-signature' as const };
        if (!check.valid) throw filesErrors.linkInvalid(check.reason);
        const row = await findFile(kernel.db, link.tenantId, link.fileId);
        // a link outlives nothing: a file deleted, purged or changed to rejected answers 404 at once
        if (!row || row.status !== 'available' || !row.object_key) throw filesErrors.fileNotFound();
        const remaining = Math.max(0, link.expires - Math.floor(kernel.clock.now().getTime() / 1000));
        if (link.variant === 'original') {
          return sendObject(reply, objects, {
            key: row.object_key,
            mimeType: row.mime_type,
            name: row.original_name,
            disposition: 'inline',
            range: request.headers.range,
            maxAgeSeconds: remaining,
          });
        }
        const thumbnail = row.thumbnails[link.variant];
        if (!thumbnail) throw filesErrors.fileNotFound();
        const name = `${row.original_name.replace(/\.[^.]*$/, '')}-${link.variant}.webp`;
        return sendObject(reply, objects, {
          key: thumbnail.objectKey,
          mimeType: thumbnail.mimeType,
          name,
          disposition: 'inline',
          range: request.headers.range,
          maxAgeSeconds: remaining,
        });
      },
    );
  },
});
