import { describe, expect, it } from 'vitest';
import { qrSvg } from '../../../infra/security/qr';
import { otpauthUri } from '../../../infra/security/totp';

const uri = otpauthUri({
  issuer: 'Acme',
  account: 'ann@example.com',
  secretBase32: 'JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP',
});

describe('a QR code for an otpauth URI', () => {
  it('is an SVG document with path data for the modules', async () => {
    const svg = await qrSvg(uri);
    expect(svg).toMatch(/^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"[^>]*>/);
    expect(svg).toMatch(/<path [^>]*d="M[^"]+"/);
    expect(svg.trimEnd()).toMatch(/<\/svg>$/);
  });

  it('has the side of a real QR symbol: 17 + 4·version modules plus a 4-module quiet zone each side', async () => {
    const svg = await qrSvg(uri);
    const [, width, height] = /viewBox="0 0 (\d+) (\d+)"/.exec(svg) ?? [];
    const side = Number(width);
    expect(Number(height)).toBe(side);
    const version = (side - 8 - 17) / 4;
    expect(Number.isInteger(version) && version >= 1 && version <= 40).toBe(true);
  });

  it('depends on the text encoded', async () => {
    expect(await qrSvg(uri)).not.toBe(await qrSvg(`${uri}x`));
  });

  it('is the same for the same text, so it can be tested and cached', async () => {
    expect(await qrSvg(uri)).toBe(await qrSvg(uri));
  });
});
