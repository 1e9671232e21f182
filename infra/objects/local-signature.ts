import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Presigned URLs of the local object store: {publicBaseUrl}/v1/objects/local/<key>?expires=<epoch s>&signature=<hex>
 * (plus contentType=… for PUT). The HMAC covers the method, the key, the expiry and, for PUT, the
 * content type, so none of them can be changed without the secret.
 *
 * The HTTP routes that serve GET and PUT URLs are not built (nothing hands them out); the form
 * uploads of presignPost are served by the files service (write-api/files/local-upload.ts).
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
  if (given.length !== expected.length || !timingSafeEqual(given, expected))
    return { valid: false, reason: 'bad-signature' };
  if (nowMs >= request.expires * 1000) return { valid: false, reason: 'expired' };
  return { valid: true };
};

/**
 * The local store's form upload (presignPost): POST {publicBaseUrl}/v1/objects/local with the fields
 * key, Content-Type, expires, min, max and signature, then the file. The HMAC covers every condition,
 * so the route that receives the form (and enforces them while streaming) can trust none it did not sign.
 */
export interface LocalPostPolicy {
  key: string;
  contentType: string;
  /** epoch seconds */
  expires: number;
  minBytes: number;
  maxBytes: number;
}

export const LOCAL_POST_PATH = '/v1/objects/local';

export const signLocalPost = (secret: string | Buffer, policy: LocalPostPolicy): string =>
  createHmac('sha256', secret)
    .update(
      [
        'POST',
        policy.key,
        policy.contentType,
        String(policy.expires),
        String(policy.minBytes),
        String(policy.maxBytes),
      ].join('\n'),
    )
    .digest('hex');

/** the form's fields as the policy they claim to be, and whether it is signed, current and complete */
export const verifyLocalPost = (
  secret: string | Buffer,
  fields: Record<string, string>,
  nowMs: number,
): LocalPresignatureCheck & { policy?: LocalPostPolicy } => {
  const policy: LocalPostPolicy = {
    key: fields.key ?? '',
    contentType: fields['Content-Type'] ?? '',
    expires: Number(fields.expires),
    minBytes: Number(fields.min),
    maxBytes: Number(fields.max),
  };
  if (![policy.expires, policy.minBytes, policy.maxBytes].every(Number.isSafeInteger))
    return { valid: false, reason: 'bad-signature' };
  const expected = Buffer.from(signLocalPost(secret, policy), 'hex');
  const signature = fields.signature ?? '';
  const given = Buffer.from(/^[0-9a-f]{64}$/.test(signature) ? signature : '', 'hex');
  if (given.length !== expected.length || !timingSafeEqual(given, expected))
    return { valid: false, reason: 'bad-signature' };
  if (nowMs >= policy.expires * 1000) return { valid: false, reason: 'expired' };
  return { valid: true, policy };
};
