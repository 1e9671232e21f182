import type { Bucket, PresetName } from '../../domain/files/constants';

/**
 * Where a file's bytes live in the object store. Uploads land in a private staging area until
 * their scan; released files live under {tenantId}/<bucket>/ (spec 002), one key per content
 * version (processing writes the next version, so the original stays until the result is
 * complete) and thumbnails beside them. No key is the folder of another (see infra/objects/port.ts).
 */
export const STAGING_PREFIX = '_staging/';

export const stagingKey = (tenantId: string, fileId: string): string => `${STAGING_PREFIX}${tenantId}/${fileId}`;

export const contentKey = (tenantId: string, bucket: Bucket, fileId: string, version: number): string =>
  `${tenantId}/${bucket}/${fileId}/v${version}`;

export const thumbnailKey = (
  tenantId: string,
  bucket: Bucket,
  fileId: string,
  version: number,
  preset: PresetName,
): string => `${tenantId}/${bucket}/${fileId}/v${version}-${preset}`;

/** the tenant and file of a staging key, or null for anything else under the prefix */
export const parseStagingKey = (key: string): { tenantId: string; fileId: string } | null => {
  const match = /^_staging\/([^/]+)\/([^/]+)$/.exec(key);
  return match ? { tenantId: match[1]!, fileId: match[2]! } : null;
};
