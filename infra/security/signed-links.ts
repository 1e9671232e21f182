import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * HMAC-SHA256 signatures of a link's fields (a key derived from PLATFORM_SECRET_KEY, one purpose
 * per kind of link): changing any field or the expiry breaks the signature. What the fields are is
 * the context's (domain/files/links.ts); this only signs and checks them.
 */
export type LinkCheck = { valid: true } | { valid: false; reason: 'expired' | 'bad-signature' };

export interface LinkSigner {
  /** the signature of the fields and the expiry (epoch seconds), hex */
  sign: (fields: readonly string[], expires: number) => string;
  /** constant-time: how much of a forged signature was right does not show in the time taken */
  check: (fields: readonly string[], expires: number, signature: string, nowMs: number) => LinkCheck;
}

export const linkSigner = (key: Buffer, scheme: string): LinkSigner => {
  const digest = (fields: readonly string[], expires: number): Buffer =>
    createHmac('sha256', key)
      .update([scheme, ...fields, String(expires)].join('\n'))
      .digest();
  return {
    sign: (fields, expires) => digest(fields, expires).toString('hex'),
    check: (fields, expires, signature, nowMs) => {
      const expected = digest(fields, expires);
      const given = Buffer.from(/^[0-9a-f]{64}$/.test(signature) ? signature : '', 'hex');
      if (given.length !== expected.length || !timingSafeEqual(given, expected))
        return { valid: false, reason: 'bad-signature' };
      if (nowMs >= expires * 1000) return { valid: false, reason: 'expired' };
      return { valid: true };
    },
  };
};
