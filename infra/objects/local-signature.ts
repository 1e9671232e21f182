import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Presigned URLs of the local object store: {publicBaseUrl}/v1/objects/local/<key>?expires=<epoch s>&signature=<hex>
 * (plus contentType=… for PUT). The HMAC covers the method, the key, the expiry and, for PUT, the
 * content type, so none of them can be changed without the secret.
 *
 * The HTTP route that serves these URLs is not built yet; it will call verifyLocalPresignature
 * and then read or write through the local ObjectStore.
 */
export interface LocalPresignedRequest {
  method: 'GET' | 'PUT';
  key: string;
  /** epoch seconds */
  expires: number;
  contentType?: string;
}

export const LOCAL_OBJECTS_PATH = '/v1/objects/local/';

export const signLocalRequest = (secret: string | Buffer, request: LocalPresignedRequest): string =>
  createHmac('sha256', secret)
    .update([request.method, request.key, String(request.expires), request.contentType ?? ''].join('\n'))
    .digest('hex');

export type LocalPresignatureCheck = { valid: true } | { valid: false; reason: 'expired' | 'bad-signature' };

export const verifyLocalPresignature = (
  secret: string | Buffer,
  request: LocalPresignedRequest & { signature: string },
  nowMs: number,
): LocalPresignatureCheck => {
  const expected = Buffer.from(signLocalRequest(secret, request), 'hex');
  const given = Buffer.from(/^[0-9a-f]{64}$/.test(request.signature) ? request.signature : '', 'hex');
  // Constant-time comparison: the time taken must not tell how many leading bytes were right.
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return { valid: false, reason: 'bad-signature' };
  if (nowMs >= request.expires * 1000) return { valid: false, reason: 'expired' };
  return { valid: true };
};
