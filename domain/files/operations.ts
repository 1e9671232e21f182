import { z } from 'zod';

/**
 * Image processing operations (spec 002, POST /files/:id/process), applied in order. Each is an
 * object naming its type: {type: "crop", x, y, width, height}, {type: "resize", width?, height?}
 * (one side omitted keeps the aspect ratio), {type: "convert", format}, {type: "rotate", degrees}.
 */
const MAX_SIDE = 10_000;
const Side = z.number().int().min(1).max(MAX_SIDE);
const Offset = z
  .number()
  .int()
  .min(0)
  .max(MAX_SIDE * 10);

export const OUTPUT_FORMATS = ['webp', 'avif', 'png', 'jpeg'] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

export const Operation = z.discriminatedUnion('type', [
  z.object({ type: z.literal('crop'), x: Offset, y: Offset, width: Side, height: Side }),
  z
    .object({ type: z.literal('resize'), width: Side.optional(), height: Side.optional() })
    .refine((r) => r.width !== undefined || r.height !== undefined, 'resize needs a width, a height or both')
    .meta({ anyOf: [{ required: ['width'] }, { required: ['height'] }] }),
  z.object({ type: z.literal('convert'), format: z.enum(OUTPUT_FORMATS) }),
  z.object({ type: z.literal('rotate'), degrees: z.union([z.literal(90), z.literal(180), z.literal(270)]) }),
]);
export type Operation = z.infer<typeof Operation>;
export const Operations = z.array(Operation).min(1).max(10);

export interface Dimensions {
  width: number;
  height: number;
}

/**
 * The size of the picture after each operation, from the source's size: a crop that leaves the
 * picture, or a result beyond maxPixels, is refused before any pixel is decoded.
 */
export const plannedDimensions = (
  ops: readonly Operation[],
  source: Dimensions,
  maxPixels: number,
): { ok: true; result: Dimensions } | { ok: false; reason: string } => {
  let { width, height } = source;
  for (const [index, op] of ops.entries()) {
    switch (op.type) {
      case 'crop':
        if (op.x + op.width > width || op.y + op.height > height) {
          return { ok: false, reason: `operation ${index} (crop) reaches outside the ${width}x${height} picture` };
        }
        ({ width, height } = op);
        break;
      case 'resize': {
        const w = op.width ?? Math.max(1, Math.round((width * op.height!) / height));
        const h = op.height ?? Math.max(1, Math.round((height * op.width!) / width));
        [width, height] = [w, h];
        break;
      }
      case 'rotate':
        if (op.degrees !== 180) [width, height] = [height, width];
        break;
      case 'convert':
        break;
    }
    if (width * height > maxPixels)
      return {
        ok: false,
        reason: `operation ${index} (${op.type}) makes a picture of ${width}x${height}, over ${maxPixels} pixels`,
      };
  }
  return { ok: true, result: { width, height } };
};

/** the format of the result: the last convert, else the source's own when it can be written, else PNG */
export const outputFormatOf = (ops: readonly Operation[], sourceMime: string): OutputFormat => {
  const converts = ops.filter((op): op is Extract<Operation, { type: 'convert' }> => op.type === 'convert');
  const last = converts[converts.length - 1];
  if (last) return last.format;
  const own = sourceMime.replace('image/', '');
  return (OUTPUT_FORMATS as readonly string[]).includes(own) ? (own as OutputFormat) : 'png';
};
