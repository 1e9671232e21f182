import type { Bucket, PresetName } from '../../domain/files/constants';
import { filesErrors } from '../../domain/files/errors';
import type { Thumbnail } from '../../domain/files/file';
import { PROCESSABLE_IMAGES } from '../../domain/files/media';
import { systemMeta } from '../../infra/kernel';
import { FileAggregate, fileStream } from './aggregates';
import type { FilesContext } from './context';
import { readAll, renderThumbnail } from './images';
import { thumbnailKey } from './keys';

/** the current content of an available file, as the thumbnail makers need it */
export interface FileContent {
  tenantId: string;
  fileId: string;
  bucket: Bucket;
  objectKey: string;
  contentVersion: number;
  mimeType: string;
}

export const isProcessableImage = (mimeType: string): boolean => PROCESSABLE_IMAGES.has(mimeType);

export const readContent = async (ctx: FilesContext, key: string): Promise<Buffer> =>
  readAll(await ctx.objects.get(key), Math.max(ctx.settings.limits.imageBytes, ctx.settings.limits.documentBytes));

const inFlight = new Map<string, Promise<Thumbnail>>();

/**
 * Makes a preset of the file's current content, stores it beside the content and records it
 * (files.file.thumbnail_created); a thumbnail of a content replaced meanwhile is removed again.
 * Requests for the same thumbnail at the same time in this process share one rendering.
 */
export const makeThumbnail = (
  ctx: FilesContext,
  file: FileContent,
  preset: PresetName,
  source?: Buffer,
): Promise<Thumbnail> => {
  const id = `${file.tenantId}/${file.fileId}/${file.contentVersion}/${preset}`;
  const running = inFlight.get(id);
  if (running) return running;
  const made = render(ctx, file, preset, source).finally(() => inFlight.delete(id));
  inFlight.set(id, made);
  return made;
};

const render = async (
  ctx: FilesContext,
  file: FileContent,
  preset: PresetName,
  source?: Buffer,
): Promise<Thumbnail> => {
  if (!isProcessableImage(file.mimeType))
    throw filesErrors.processingFailed(`a ${file.mimeType} file has no thumbnails`);
  const { settings, kernel } = ctx;
  const image = await renderThumbnail(source ?? (await readContent(ctx, file.objectKey)), preset, {
    maxPixels: settings.maxPixels,
    timeoutMs: settings.processingTimeoutMs,
  });
  const key = thumbnailKey(file.tenantId, file.bucket, file.fileId, file.contentVersion, preset);
  await ctx.objects.put(key, image.data, { contentType: image.mimeType });
  const thumbnail: Thumbnail = { objectKey: key, mimeType: image.mimeType, width: image.width, height: image.height };
  const current = await kernel.commands.run(systemMeta(file.tenantId), async (uow) => {
    const loaded = await uow.load(FileAggregate, fileStream(file.tenantId, file.fileId));
    return uow.decide(FileAggregate, loaded, {
      type: 'AddThumbnail',
      preset,
      contentVersion: file.contentVersion,
      thumbnail,
      now: kernel.clock.now().toISOString(),
    }).state;
  });
  const recorded = current.status === 'none' ? undefined : current.thumbnails[preset];
  if (recorded?.objectKey === key) return recorded;
  // the file changed meanwhile (processed, deleted): this rendering belongs to nothing
  await ctx.objects.delete(key).catch(() => undefined);
  throw filesErrors.fileNotFound();
};
