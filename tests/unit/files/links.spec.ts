import { describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { LINK_SCHEME, linkerOf, linkFields, type Link } from '../../../domain/files/links';
import { linkSigner } from '../../../infra/security/signed-links';

const signer = linkSigner(randomBytes(32), LINK_SCHEME);
const link: Link = { tenantId: 'tenant-a', fileId: 'f-1', variant: 'original', expires: 2_000_000_000 };
const signatureOf = (url: string) => new URL(url).searchParams.get('signature')!;
const verify = (s: typeof signer, l: Link, signature: string, nowMs: number) =>
  s.check(linkFields(l), l.expires, signature, nowMs);

describe('a signed file link', () => {
  const url = linkerOf(signer.sign, 'https://api.example.test', link.tenantId, link.expires)(link.fileId, link.variant);
  const signature = signatureOf(url);
  it('names the file, tenant, variant and expiry', () =>
    expect(url).toMatch(
      /^https:\/\/api\.example\.test\/v1\/files\/f-1\/content\?tenant=tenant-a&variant=original&expires=2000000000&signature=[0-9a-f]{64}$/,
    ));
  it('verifies until it expires', () => {
    expect(verify(signer, link, signature, 1_999_999_999_000)).toEqual({ valid: true });
    expect(verify(signer, link, signature, 2_000_000_000_000)).toEqual({ valid: false, reason: 'expired' });
  });
  it('binds tenant, file, variant and expiry: changing any breaks it', () => {
    for (const changed of [
      { tenantId: 'tenant-b' },
      { fileId: 'f-2' },
      { variant: 'icon_32' as const },
      { expires: link.expires + 60 },
    ]) {
      expect(verify(signer, { ...link, ...changed }, signature, 0)).toEqual({ valid: false, reason: 'bad-signature' });
    }
    expect(verify(linkSigner(randomBytes(32), LINK_SCHEME), link, signature, 0)).toEqual({
      valid: false,
      reason: 'bad-signature',
    });
    expect(verify(signer, link, 'not-hex', 0)).toEqual({ valid: false, reason: 'bad-signature' });
  });
  it('is of its own kind: the same key signing another scheme does not make a file link', () => {
    const key = randomBytes(32);
    const other = linkSigner(key, 'exports.link.v1').sign(linkFields(link), link.expires);
    expect(verify(linkSigner(key, LINK_SCHEME), link, other, 0)).toEqual({ valid: false, reason: 'bad-signature' });
  });
});
