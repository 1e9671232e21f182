import { describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { linkUrl, verifyLink, type Link } from '../../../commands/files/links';

const key = randomBytes(32);
const link: Link = { tenantId: 'tenant-a', fileId: 'f-1', variant: 'original', expires: 2_000_000_000 };
const signatureOf = (url: string) => new URL(url).searchParams.get('signature')!;

describe('a signed file link', () => {
  const signature = signatureOf(linkUrl(key, 'https://api.example.test', link));
  it('names the file, tenant, variant and expiry', () =>
    expect(linkUrl(key, 'https://api.example.test', link)).toMatch(/^https:\/\/api\.example\.test\/v1\/files\/f-1\/content\?tenant=tenant-a&variant=original&expires=2000000000&signature=[0-9a-f]{64}$/));
  it('verifies until it expires', () => {
    expect(verifyLink(key, link, signature, 1_999_999_999_000)).toEqual({ valid: true });
    expect(verifyLink(key, link, signature, 2_000_000_000_000)).toEqual({ valid: false, reason: 'expired' });
  });
  it('binds tenant, file, variant and expiry: changing any breaks it', () => {
    for (const changed of [{ tenantId: 'tenant-b' }, { fileId: 'f-2' }, { variant: 'icon_32' as const }, { expires: link.expires + 60 }]) {
      expect(verifyLink(key, { ...link, ...changed }, signature, 0)).toEqual({ valid: false, reason: 'bad-signature' });
    }
    expect(verifyLink(randomBytes(32), link, signature, 0)).toEqual({ valid: false, reason: 'bad-signature' });
    expect(verifyLink(key, link, 'not-hex', 0)).toEqual({ valid: false, reason: 'bad-signature' });
  });
});
