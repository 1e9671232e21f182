import { createHmac } from 'node:crypto';
import type { PresignedPost, PresignPostOptions } from './port';

/**
 * An S3 browser-based upload (POST Object) signed with SigV4: a policy document listing what the
 * form must hold (this key, this Content-Type, a size within content-length-range) and until when,
 * signed with the secret's date/region/service key. The store checks every condition itself, so a
 * client cannot change the key, the type or the size, nor use the form after it expires.
 * (AWS documents the format in "Creating a POST policy" and "Calculating a signature: POST".)
 * Written here rather than with @aws-sdk/s3-presigned-post, which pins its own copy of client-s3.
 */
export interface PostPolicySigner {
  endpoint: string;
  bucket: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
}

const hmac = (key: Buffer | string, text: string): Buffer => createHmac('sha256', key).update(text, 'utf8').digest();

/** 20240501T100000Z */
const amzDate = (at: Date): string =>
  at
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '');

export const signPostPolicy = (
  signer: PostPolicySigner,
  key: string,
  options: PresignPostOptions,
  now: Date,
): PresignedPost => {
  const date = amzDate(now);
  const day = date.slice(0, 8);
  const credential = `${signer.accessKeyId}/${day}/${signer.region}/s3/aws4_request`;
  const expiresAt = new Date(now.getTime() + options.ttlSeconds * 1000);
  const fields: Record<string, string> = {
    key,
    'Content-Type': options.contentType,
    'x-amz-algorithm': 'AWS4-HMAC-SHA256',
    'x-amz-credential': credential,
    'x-amz-date': date,
  };
  const policy = {
    expiration: expiresAt.toISOString(),
    conditions: [
      { bucket: signer.bucket },
      ...Object.entries(fields).map(([name, value]) => ({ [name]: value })),
      ['content-length-range', options.minBytes, options.maxBytes],
    ],
  };
  const encoded = Buffer.from(JSON.stringify(policy)).toString('base64');
  const signingKey = hmac(hmac(hmac(hmac(`AWS4${signer.secretAccessKey}`, day), signer.region), 's3'), 'aws4_request');
  const url = `${signer.endpoint.replace(/\/+$/, '')}/${encodeURIComponent(signer.bucket)}`;
  return {
    url,
    expiresAt,
    fields: { ...fields, policy: encoded, 'x-amz-signature': hmac(signingKey, encoded).toString('hex') },
  };
};
