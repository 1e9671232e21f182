import * as crypto from 'node:crypto';
import { createHash, createHmac } from 'node:crypto';

// crypto.hash (Node ≥ 20.12) digests in one call without a Hash object: half the cost of
// createHash for the audit chain's short texts, one per record ingested or verified.
const oneShot = (crypto as { hash?: typeof crypto.hash }).hash;

/** SHA-256 of a text (UTF-8), hex: what the audit hash chain links records with */
export const sha256Hex: (text: string) => string = oneShot
  ? (text) => oneShot('sha256', text, 'hex')
  : (text) => createHash('sha256').update(text, 'utf8').digest('hex');

/** HMAC-SHA256 under a key (a purpose key of infra/secrets.ts), hex: digests that only the key's holder can compute */
export const hmacSha256Hex =
  (key: Buffer): ((text: string) => string) =>
  (text) =>
    createHmac('sha256', key).update(text, 'utf8').digest('hex');
