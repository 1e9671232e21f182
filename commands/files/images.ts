import type { Readable } from 'node:stream';
import type { Sharp } from 'sharp';
import { lazyImport } from '../../infra/runtime/lazy';
import { PRESETS, type PresetName } from '../../domain/files/constants';
import { filesErrors } from '../../domain/files/errors';
import type { Dimensions, Operation, OutputFormat } from '../../domain/files/operations';
import { outputFormatOf, plannedDimensions } from '../../domain/files/operations';

/**
 * Images with sharp (libvips). Every decoder is opened with limitInputPixels, so a picture whose
 * header declares more pixels than FILES_IMAGE_MAX_PIXELS (a decompression bomb) is refused before
 * a single pixel is decoded, and with a libvips timeout; the caller races the whole job against
 * the same deadline. libvips' operation cache is off: nothing of one request stays in memory.
 * sharp is loaded on the first image: most processes never handle one.
 */
const loadSharp = lazyImport(async () => {
  const sharp = (await import('sharp')).default;
  sharp.cache(false);
  return sharp;
});
type SharpFactory = Awaited<ReturnType<typeof loadSharp>>;
type Pipeline = Sharp;

export interface ImageLimits {
  maxPixels: number;
  timeoutMs: number;
}

export interface RenderedImage {
  data: Buffer;
  mimeType: string;
  width: number;
  height: number;
}

export class ImageTimeout extends Error {
  constructor(ms: number) {
    super(`image processing did not finish within ${ms} ms`);
    this.name = 'ImageTimeout';
  }
}

const open = (sharp: SharpFactory, input: Buffer, limits: ImageLimits) =>
  sharp(input, { limitInputPixels: limits.maxPixels, failOn: 'error', sequentialRead: true }).timeout({
    seconds: Math.max(1, Math.ceil(limits.timeoutMs / 1000)),
  });

/** the reason sharp gave, as a client may read it (no paths, no internals) */
const reasonOf = (error: unknown): string => {
  const message = error instanceof Error ? error.message : String(error);
  if (/pixel limit/i.test(message)) return 'the image has more pixels than allowed (refused before decoding)';
  if (/timeout/i.test(message)) return 'image processing took too long';
  if (/unsupported image format/i.test(message)) return 'the file is not an image that can be processed';
  return 'the image is corrupt or cannot be decoded';
};

/** a failure of sharp as the 422 of the catalog (timeouts stay timeouts: the caller keeps the original) */
export const asProcessingError = (error: unknown): Error =>
  error instanceof ImageTimeout ? error : filesErrors.processingFailed(reasonOf(error));

/** the work, or ImageTimeout at the deadline (libvips stops on its own timeout as well) */
export const withinDeadline = async <T>(ms: number, work: () => Promise<T>): Promise<T> => {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      work(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new ImageTimeout(ms)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
};

/** the whole object, refused beyond maxBytes (images are at most FILES_MAX_IMAGE_SIZE_MB) */
export const readAll = async (body: Readable, maxBytes: number): Promise<Buffer> => {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) {
      body.destroy();
      throw filesErrors.processingFailed(`the image is larger than ${maxBytes} bytes`);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
};

/** the picture's size from its header alone (nothing decoded), the pixel limit checked */
export const probeImage = async (input: Buffer, limits: ImageLimits): Promise<Dimensions & { format: string }> => {
  const sharp = await loadSharp();
  try {
    const meta = await open(sharp, input, limits).metadata();
    if (!meta.width || !meta.height || !meta.format) throw new Error('corrupt');
    // EXIF orientations 5-8 turn the picture a quarter: operations see it upright
    const turned = (meta.orientation ?? 1) >= 5;
    return { width: turned ? meta.height : meta.width, height: turned ? meta.width : meta.height, format: meta.format };
  } catch (error) {
    throw asProcessingError(error);
  }
};

/** a thumbnail of the first frame, upright, as WebP */
export const renderThumbnail = async (
  input: Buffer,
  preset: PresetName,
  limits: ImageLimits,
): Promise<RenderedImage> => {
  const p = PRESETS[preset];
  const sharp = await loadSharp();
  try {
    return await withinDeadline(limits.timeoutMs, async () => {
      const { data, info } = await open(sharp, input, limits)
        .rotate()
        .resize({ width: p.width, height: p.height ?? undefined, fit: p.fit, withoutEnlargement: p.fit === 'inside' })
        .webp({ quality: 80 })
        .toBuffer({ resolveWithObject: true });
      return { data, mimeType: 'image/webp', width: info.width, height: info.height };
    });
  } catch (error) {
    throw asProcessingError(error);
  }
};

const encode = (image: Pipeline, format: OutputFormat, quality: number): Pipeline => {
  switch (format) {
    case 'webp':
      return image.webp({ quality });
    case 'avif':
      return image.avif({ quality });
    case 'jpeg':
      return image.jpeg({ quality, mozjpeg: true });
    case 'png':
      return image.png({ quality: Math.max(1, quality), compressionLevel: 9 });
  }
};

const applyOne = (image: Pipeline, op: Operation): Pipeline => {
  switch (op.type) {
    case 'crop':
      return image.extract({ left: op.x, top: op.y, width: op.width, height: op.height });
    case 'resize':
      return image.resize({ width: op.width, height: op.height, fit: op.width && op.height ? 'fill' : 'inside' });
    case 'rotate':
      return image.rotate(op.degrees);
    case 'convert':
      return image;
  }
};

/**
 * The operations in their order. sharp applies one pipeline's steps in a fixed order of its own,
 * so each step is a pipeline of its own on raw pixels (within the pixel limit, checked for every
 * step before any decoding by plannedDimensions), and only the result is encoded.
 */
export const applyOperations = async (
  input: Buffer,
  sourceMime: string,
  ops: readonly Operation[],
  quality: number,
  limits: ImageLimits,
): Promise<RenderedImage> => {
  const source = await probeImage(input, limits);
  const plan = plannedDimensions(ops, source, limits.maxPixels);
  if (!plan.ok) throw filesErrors.processingFailed(plan.reason);
  const format = outputFormatOf(ops, sourceMime);
  const sharp = await loadSharp();
  try {
    return await withinDeadline(limits.timeoutMs, async () => {
      let pixels = await open(sharp, input, limits).rotate().raw().toBuffer({ resolveWithObject: true });
      for (const op of ops.filter((o) => o.type !== 'convert')) {
        const { width, height, channels } = pixels.info;
        pixels = await applyOne(
          sharp(pixels.data, { raw: { width, height, channels }, limitInputPixels: limits.maxPixels }),
          op,
        )
          .raw()
          .toBuffer({ resolveWithObject: true });
      }
      const { width, height, channels } = pixels.info;
      const { data, info } = await encode(
        sharp(pixels.data, { raw: { width, height, channels } }),
        format,
        quality,
      ).toBuffer({ resolveWithObject: true });
      return { data, mimeType: `image/${format}`, width: info.width, height: info.height };
    });
  } catch (error) {
    throw asProcessingError(error);
  }
};
