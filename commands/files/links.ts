import { createHmac, timingSafeEqual } from 'node:crypto';
import { isPreset, type PresetName } from '../../domain/files/constants';

/**
 * Signed download links: {root_url}/v1/files/<id>/content?tenant=…&variant=…&expires=…&signature=…
 * The HMAC (a key derived from PLATFORM_SECRET_KEY) covers the tenant, the file, the variant
 * (original or a thumbnail preset) and the expiry, so a link opens exactly one file of one tenant
 * until it expires, and changing any part of it breaks the signature. The platform serves the bytes
 * itself (read-api), so every store answers with the same headers and a deleted file's links stop
 * working at once (docs/decisions.md, Files).
 */
export const LINK_KEY_PURPOSE = 'files.links.v1';

export type LinkVariant = 'original' | PresetName;

export interface Link {
  tenantId: string;
  fileId: string;
  variant: LinkVariant;
  /** epoch seconds */
  expires: number;
}

const sign = (key: Buffer, link: Link): Buffer =>
  createHmac('sha256', key).update(['files.link.v1', link.tenantId, link.fileId, link.variant, String(link.expires)].join('\n')).digest();

export const linkUrl = (key: Buffer, rootUrl: string, link: Link): string => {
  const query = new URLSearchParams({ tenant: link.tenantId, variant: link.variant, expires: String(link.expires), signature: sign(key, link).toString('hex') });
  return `${rootUrl}/v1/files/${encodeURIComponent(link.fileId)}/content?${query.toString()}`;
};

export const isLinkVariant = (value: string): value is LinkVariant => value === 'original' || isPreset(value);

export type LinkCheck = { valid: true } | { valid: false; reason: 'expired' | 'bad-signature' };

/** constant-time: how much of a forged signature was right does not show in the time taken */
export const verifyLink = (key: Buffer, link: Link, signature: string, nowMs: number): LinkCheck => {
  const expected = sign(key, link);
  const given = Buffer.from(/^[0-9a-f]{64}$/.test(signature) ? signature : '', 'hex');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return { valid: false, reason: 'bad-signature' };
  if (nowMs >= link.expires * 1000) return { valid: false, reason: 'expired' };
  return { valid: true };
};
