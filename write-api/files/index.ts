import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { BUCKETS, META_MAX_BYTES, ORIGINAL_NAME_MAX_BYTES } from '../../domain/files/constants';
import { filesErrors } from '../../domain/files/errors';
import { uploadFields } from '../../domain/files/fields';
import { limitFor } from '../../domain/files/media';
import { safeFileName } from '../../domain/files/names';
import { Operations } from '../../domain/files/operations';
import { FileView } from '../../domain/files/views';
import { configureFiles, filesContext } from '../../commands/files/context';
import * as files from '../../commands/files/handlers';
import { stagingKey } from '../../commands/files/keys';
import { countStaged } from '../../commands/files/lookups';
import { receiveMultipart } from '../../commands/files/uploads';
import { executeCommand } from '../../infra/http/commands';
import { BYTES, multipartBody } from '../../infra/http/operation-docs';
import { answeringBeforeTheBody, drainRest } from '../../infra/http/drain';
import type { Kernel } from '../../infra/kernel';
import { defineRoutes } from '../../infra/modules';
import { registerLocalUpload } from './local-upload';
import { registerThumbnail } from './thumbnail';
import { callerOf } from '../../infra/http/auth';

const Id = z.uuid({ message: 'must be a UUID' });
const IdParams = z.object({ id: Id });
/** room for the multipart framing and text fields around the largest file allowed */
const MULTIPART_SLACK = 64 * 1024;

/** a media type such as image/png (what uploads and presigns accept) */
const MEDIA_TYPE = /^[\w.+-]+\/[\w.+-]+$/;
/** the multipart body of POST /files/upload as domain/files/fields.ts checks it (the stream is read by the handler, not validated by a schema) */
const UploadForm = multipartBody(
  'The text fields first (an unknown bucket or a bad field refuses the upload before its bytes are stored), then the part `file`.',
  {
    bucket: { type: 'string', enum: [...BUCKETS] },
    originalName: {
      type: 'string',
      minLength: 1,
      maxLength: ORIGINAL_NAME_MAX_BYTES,
      description: 'at most 1024 bytes of UTF-8',
    },
    mimeType: {
      type: 'string',
      // parameters (; charset=…) are allowed here: the check reads the type before them
      pattern: '^\\s*[\\w.+-]+/[\\w.+-]+\\s*(;.*)?$',
      description:
        'the type the client names: used only for text without a signature; otherwise detected from the bytes',
    },
    meta: {
      type: 'string',
      maxLength: META_MAX_BYTES,
      contentMediaType: 'application/json',
      description: `a JSON object, at most ${META_MAX_BYTES} bytes`,
    },
    file: {
      ...BYTES,
      description: 'the file: images up to FILES_MAX_IMAGE_SIZE_MB, others up to FILES_MAX_DOCUMENT_SIZE_MB',
    },
  },
  ['bucket', 'originalName', 'file'],
);

const PresignBody = z.object({
  // an unknown bucket answers its own suffix (bucket-invalid), so the enum is the document's, not the validator's
  bucket: z
    .string()
    .max(32)
    .meta({ enum: [...BUCKETS] }),
  originalName: z.string().min(1).max(1024),
  mimeType: z.string().regex(MEDIA_TYPE, 'must be a media type such as image/png').max(255),
  sizeBytes: z.number().int().min(1),
});
const PresignAnswer = z.object({
  uploadUrl: z.string(),
  fileId: z.string(),
  expiresAt: z.string(),
  fields: z.record(z.string(), z.string()),
});
const ProcessBody = z.object({ operations: Operations, quality: z.number().int().min(1).max(100).default(85) });
const JobStarted = z.object({
  fileId: z.string(),
  jobId: z.string(),
  status: z.literal('processing'),
  startedAt: z.string(),
});

/** every mutation of files writes the tenant's data: refused while its subscription is suspended */
const write = { access: 'permission', permission: 'files.write', whileSuspended: 'refused' } as const;
const remove = { access: 'permission', permission: 'files.delete', whileSuspended: 'refused' } as const;

/** a refusal before the body was read: the body is drained or the connection closed (infra/http/drain.ts) */
const refuseUnread = (request: FastifyRequest, reply: FastifyReply, error: Error): never => {
  answeringBeforeTheBody(request, reply);
  throw error;
};

/**
 * What can be refused before a byte of the upload is read — not multipart, a Content-Length over
 * the largest limit, the staging area full — as a route hook, so that in split deployment the
 * gateway answers it itself instead of streaming a body that will be refused.
 */
const beforeUpload = (kernel: Kernel) => async (request: FastifyRequest, reply: FastifyReply) => {
  const { limits, maxStagedPerTenant } = filesContext(kernel).settings;
  if (!request.bodyStream) throw filesErrors.multipartRequired(request.headers['content-type']);
  const largest = Math.max(limits.imageBytes, limits.documentBytes);
  if (Number(request.headers['content-length'] ?? 0) > largest + MULTIPART_SLACK) {
    refuseUnread(
      request,
      reply,
      filesErrors.payloadTooLarge(limits.documentBytes >= limits.imageBytes ? 'document' : 'image', largest),
    );
  }
  // the exact count is taken again when the file is recorded; this one spares streaming bytes for nothing
  if ((await countStaged(kernel.db, callerOf(request).tenantId)) >= maxStagedPerTenant)
    refuseUnread(request, reply, filesErrors.stagingLimitExceeded(maxStagedPerTenant));
};

/**
 * POST /files/upload: the multipart body streams into the staging area (never whole in memory,
 * bounded while it flows), then the file is recorded as pending_scan and its scan queued.
 */
const upload = (kernel: Kernel) => async (request: FastifyRequest, reply: FastifyReply) => {
  const ctx = filesContext(kernel);
  const tenantId = callerOf(request).tenantId;
  const fileId = kernel.ids.next();
  const key = stagingKey(tenantId, fileId);
  try {
    const received = await receiveMultipart(
      ctx.objects,
      { headers: request.headers, body: request.bodyStream! },
      key,
      ctx.settings.limits,
    );
    const f = uploadFields(received.fields);
    await executeCommand(kernel, request, reply, { status: 201 }, (uow) =>
      files.stageFile(uow, ctx, {
        fileId,
        bucket: f.bucket,
        originalName: f.originalName,
        mimeType: received.mimeType,
        sizeBytes: received.sizeBytes,
        meta: f.meta,
        uploadedBy: callerOf(request).userId,
        via: 'upload',
        stagingKey: key,
        uploadBy: null,
      }),
    );
  } catch (error) {
    drainRest(request);
    await ctx.objects.delete(key).catch(() => undefined);
    throw error;
  }
};

export default defineRoutes({
  namespace: 'files',
  permissions: {
    'files.read': 'list files, read them, their links and thumbnails',
    'files.write': 'upload files, presign uploads, process images',
    'files.delete': 'delete files (to the trash or for good) and restore them',
  },
  async start(kernel) {
    const ctx = configureFiles(kernel);
    if (ctx.settings.scan === 'skip') {
      kernel.logger.warn(
        'FILES_SCAN=skip: uploaded files are released WITHOUT a virus scan (scan status skipped); development only',
      );
    } else if (!ctx.scanner) {
      kernel.logger.warn('CLAMD_HOST is not set: uploaded files stay pending_scan until a virus scanner is configured');
      kernel.health.register('clamav', async () => {
        throw new Error('no virus scanner configured (CLAMD_HOST): uploaded files stay pending_scan');
      });
    }
  },
  register(app, kernel) {
    // uploads are read as they arrive (commands/files/uploads.ts): the parser hands the stream over
    app.addContentTypeParser('multipart/form-data', (request, payload, done) => {
      request.bodyStream = payload;
      done(null, undefined);
    });
    const r = app.withTypeProvider<ZodTypeProvider>();
    const ctx = () => filesContext(kernel);

    r.post(
      '/files/upload',
      {
        // counted: at or above the plan's storage_bytes the gateway answers 402 plan-limit-exceeded (billing)
        config: {
          ...write,
          streamBody: true,
          counts: 'storage_bytes',
          problems: [402, 413, 415, 503],
          openapi: { requestBody: UploadForm },
        },
        preHandler: beforeUpload(kernel),
        schema: {
          summary: 'Upload a file (multipart/form-data: file, bucket, originalName, mimeType?, meta?)',
          description:
            'Streams the part `file` into the staging area; the type is detected from its bytes. Images up to FILES_MAX_IMAGE_SIZE_MB, ' +
            'other files up to FILES_MAX_DOCUMENT_SIZE_MB (413); `meta` is a JSON object of at most 4 KB. The file is pending_scan until its virus scan.',
          consumes: ['multipart/form-data'],
          response: { 201: FileView },
        },
      },
      upload(kernel),
    );

    r.post(
      '/files/presign',
      {
        config: { ...write, idempotency: 'optional', counts: 'storage_bytes', problems: [402, 413, 503] },
        schema: { body: PresignBody, response: { 200: PresignAnswer } },
      },
      async (request, reply) => {
        const c = ctx();
        const b = request.body;
        if (!(BUCKETS as readonly string[]).includes(b.bucket)) throw filesErrors.bucketInvalid(b.bucket);
        const max = limitFor(b.mimeType, c.settings.limits);
        if (b.sizeBytes > max)
          throw filesErrors.payloadTooLarge(b.mimeType.startsWith('image/') ? 'image' : 'document', max);
        const tenantId = callerOf(request).tenantId;
        const fileId = kernel.ids.next();
        const key = stagingKey(tenantId, fileId);
        // the form is signed before the file is recorded: no call to the store inside the transaction
        const form = await c.objects.presignPost(key, {
          ttlSeconds: c.settings.presignTtlSeconds,
          contentType: b.mimeType,
          minBytes: 1,
          maxBytes: b.sizeBytes,
        });
        return executeCommand(kernel, request, reply, { idempotency: 'optional' }, async (uow) => {
          await files.stageFile(uow, c, {
            fileId,
            bucket: b.bucket as (typeof BUCKETS)[number],
            originalName: safeFileName(b.originalName),
            mimeType: b.mimeType,
            sizeBytes: b.sizeBytes,
            meta: '{}',
            uploadedBy: callerOf(request).userId,
            via: 'presign',
            stagingKey: key,
            uploadBy: form.expiresAt,
          });
          return { uploadUrl: form.url, fileId, expiresAt: form.expiresAt.toISOString(), fields: form.fields };
        });
      },
    );

    r.delete(
      '/files/:id',
      {
        config: { ...remove, problems: [422] },
        schema: { params: IdParams, response: { 204: z.null().describe('moved to the trash') } },
      },
      (request, reply) =>
        executeCommand(kernel, request, reply, { status: 204 }, async (uow) => {
          await files.softDelete(uow, ctx(), request.params.id);
          return null;
        }),
    );

    r.delete(
      '/files/:id/permanent',
      {
        config: { ...remove, problems: [422] },
        schema: { params: IdParams, response: { 204: z.null().describe('deleted for good, its objects removed') } },
      },
      (request, reply) =>
        executeCommand(kernel, request, reply, { status: 204 }, async (uow) => {
          await files.purgeFile(uow, ctx(), request.params.id, 'requested');
          return null;
        }),
    );

    r.post(
      '/files/:id/restore',
      {
        config: { ...remove, idempotency: 'optional', problems: [410, 422] },
        schema: { params: IdParams, response: { 200: FileView } },
      },
      (request, reply) =>
        executeCommand(kernel, request, reply, { idempotency: 'optional' }, (uow) =>
          files.restore(uow, ctx(), request.params.id),
        ),
    );

    r.post(
      '/files/:id/process',
      {
        config: { ...write, idempotency: 'optional', problems: [422] },
        schema: { params: IdParams, body: ProcessBody, response: { 202: JobStarted } },
      },
      async (request, reply) => {
        const c = ctx();
        // decoded only as far as its header: an unsupported, corrupt or oversized picture is refused now
        await files.checkProcessable(c, callerOf(request).tenantId, request.params.id, request.body.operations);
        return executeCommand(kernel, request, reply, { status: 202, idempotency: 'optional' }, (uow) =>
          files.startProcessing(uow, c, request.params.id, {
            jobId: kernel.ids.next(),
            operations: request.body.operations,
            quality: request.body.quality,
          }),
        );
      },
    );

    registerThumbnail(app, kernel);
    registerLocalUpload(app, kernel);
  },
});

export { configureFiles };
