import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { isPreset, PRESET_NAMES } from '../../domain/files/constants';
import { filesErrors } from '../../domain/files/errors';
import { filesContext } from '../../commands/files/context';
import { availableFile } from '../../commands/files/lookups';
import { makeThumbnail } from '../../commands/files/thumbnails';
import type { Kernel } from '../../infra/kernel';
import { redirectAnswer } from '../../infra/http/operation-docs';
import { callerOf } from '../../infra/http/auth';

/**
 * GET /files/:id/thumbnail/:preset — a GET of the write API: the first request of a preset renders
 * and records it (a write), later ones find it kept; either way a 302 to its signed link.
 */
export const registerThumbnail = (app: FastifyInstance, kernel: Kernel): void => {
  app.withTypeProvider<ZodTypeProvider>().get(
    '/files/:id/thumbnail/:preset',
    {
      config: {
        access: 'permission',
        permission: 'files.read',
        problems: [422],
        openapi: {
          responses: redirectAnswer('the thumbnail: Location is its short-lived signed link (GET it without a token)'),
        },
      },
      schema: {
        // an unknown preset answers its own suffix (preset-not-found), so the enum is the document's
        params: z.object({
          id: z.uuid({ message: 'must be a UUID' }),
          preset: z.string().max(32).meta({ enum: PRESET_NAMES }),
        }),
        response: { 302: z.null().describe('302: Location is a short-lived signed link (GET it without a token)') },
      },
    },
    async (request, reply) => {
      const ctx = filesContext(kernel);
      const tenantId = callerOf(request).tenantId;
      const { preset } = request.params;
      if (!isPreset(preset)) throw filesErrors.presetNotFound(preset);
      const file = await availableFile(kernel.db, tenantId, request.params.id);
      // made on the first request (on-demand presets, or automatic ones that are missing), then kept
      if (!file.thumbnails[preset]) {
        await makeThumbnail(
          ctx,
          {
            tenantId,
            fileId: file.id,
            bucket: file.bucket,
            objectKey: file.objectKey,
            contentVersion: file.contentVersion,
            mimeType: file.mimeType,
          },
          preset,
        );
      }
      return reply.redirect(ctx.linker(tenantId)(file.id, preset), 302);
    },
  );
};
