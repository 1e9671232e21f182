import { createECDH, createHash } from 'node:crypto';
import type { PlatformSecrets } from '../../../infra/secrets';

export interface VapidKeys {
  /** the uncompressed P-256 point, base64url: what browsers pass to pushManager.subscribe as applicationServerKey */
  publicKey: string;
  /** the 32-byte private scalar, base64url */
  privateKey: string;
}

export const VAPID_KEY_PURPOSE = 'notify.vapid.v1';

/**
 * The platform's VAPID key pair (RFC 8292) when none is configured: derived from
 * PLATFORM_SECRET_KEY, so every role computes the same pair and browsers' subscriptions survive
 * restarts. A derived value outside the curve's range (odds about 2^-32) is hashed again.
 */
export const deriveVapidKeys = (secrets: PlatformSecrets): VapidKeys => {
  let candidate = secrets.key(VAPID_KEY_PURPOSE);
  for (let round = 0; round < 16; round += 1) {
    const ecdh = createECDH('prime256v1');
    try {
      ecdh.setPrivateKey(candidate);
      return { publicKey: ecdh.getPublicKey().toString('base64url'), privateKey: candidate.toString('base64url') };
    } catch {
      candidate = createHash('sha256').update(candidate).digest();
    }
  }
  throw new Error('no valid P-256 key could be derived for VAPID');
};

/** the VAPID subject: configured, else the https root URL, else mailto: the sender address */
export const vapidSubjectOf = (configured: string | null, rootUrl: string, mailFrom: string): string => {
  if (configured) return configured;
  if (rootUrl.startsWith('https://')) return rootUrl;
  const address = /<([^<>\s]+@[^<>\s]+)>/.exec(mailFrom)?.[1] ?? mailFrom.trim();
  return `mailto:${address}`;
};
