import { describe, expect, it } from 'vitest';
import { Operations, outputFormatOf, plannedDimensions } from '../../../domain/files/operations';

const plan = (ops: unknown, width = 4000, height = 3000, maxPixels = 50_000_000) =>
  plannedDimensions(Operations.parse(ops), { width, height }, maxPixels);

describe('processing operations on a 4000x3000 picture', () => {
  it('keeps the aspect ratio when a resize names one side', () =>
    expect(plan([{ type: 'resize', width: 400 }])).toEqual({ ok: true, result: { width: 400, height: 300 } }));
  it('follows a crop, then a quarter turn', () =>
    expect(
      plan([
        { type: 'crop', x: 0, y: 0, width: 1000, height: 500 },
        { type: 'rotate', degrees: 90 },
      ]),
    ).toEqual({ ok: true, result: { width: 500, height: 1000 } }));
  it('refuses a crop that leaves the picture', () =>
    expect(plan([{ type: 'crop', x: 3500, y: 0, width: 1000, height: 10 }])).toMatchObject({ ok: false }));
  it('refuses a result beyond the pixel limit', () =>
    expect(plan([{ type: 'resize', width: 10_000, height: 10_000 }])).toMatchObject({ ok: false }));
  it('refuses unknown types, bad angles and formats, an empty list and more than 10 operations', () => {
    for (const bad of [
      [{ type: 'blur' }],
      [{ type: 'rotate', degrees: 45 }],
      [{ type: 'convert', format: 'bmp' }],
      [{ type: 'resize' }],
      [],
      Array(11).fill({ type: 'rotate', degrees: 90 }),
    ]) {
      expect(Operations.safeParse(bad).success).toBe(false);
    }
  });
  it("writes the last convert's format, else the source's own, else PNG", () => {
    expect(
      outputFormatOf(
        Operations.parse([
          { type: 'convert', format: 'webp' },
          { type: 'convert', format: 'avif' },
        ]),
        'image/jpeg',
      ),
    ).toBe('avif');
    expect(outputFormatOf(Operations.parse([{ type: 'rotate', degrees: 90 }]), 'image/jpeg')).toBe('jpeg');
    expect(outputFormatOf(Operations.parse([{ type: 'rotate', degrees: 90 }]), 'image/gif')).toBe('png');
  });
});
