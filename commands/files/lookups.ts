import type { Bucket, FileStatus, PresetName } from '../../domain/files/constants';
import { filesErrors } from '../../domain/files/errors';
import type { Thumbnail } from '../../domain/files/file';
import type { Queryable } from '../../infra/postgres/db';

/**
 * What the files commands read of read models, with SQL of their own (the read side keeps its
 * queries in projections/files/queries.ts): every query is filtered by the caller's tenant.
 */
export interface StoredFile {
  id: string;
  bucket: Bucket;
  status: FileStatus | 'purged';
  mimeType: string;
  objectKey: string | null;
  contentVersion: number;
  thumbnails: Partial<Record<PresetName, Thumbnail>>;
  rejectionReason: string | null;
}
export type AvailableFile = StoredFile & { objectKey: string };

export const countStaged = async (q: Queryable, tenantId: string): Promise<number> =>
  Number(
    (
      await q.query<{ n: string }>(
        `SELECT count(*)::text AS n FROM rm.files_files WHERE tenant_id = $1 AND status = 'pending_scan'`,
        [tenantId],
      )
    ).rows[0]?.n ?? 0,
  );

/** an available file of the tenant as the read model has it: 404 for unknown, pending, trashed or purged, 422 for rejected */
export const availableFile = async (q: Queryable, tenantId: string, fileId: string): Promise<AvailableFile> => {
  const { rows } = await q.query<{
    id: string;
    bucket: Bucket;
    status: StoredFile['status'];
    mime_type: string;
    object_key: string | null;
    content_version: number;
    thumbnails: StoredFile['thumbnails'];
    rejection_reason: string | null;
  }>(
    `SELECT id, bucket, status, mime_type, object_key, content_version, thumbnails, rejection_reason FROM rm.files_files WHERE tenant_id = $1 AND id = $2`,
    [tenantId, fileId],
  );
  const r = rows[0];
  if (r?.status === 'rejected') throw filesErrors.fileRejected(r.rejection_reason ?? 'rejected');
  if (!r || r.status !== 'available' || !r.object_key) throw filesErrors.fileNotFound();
  return {
    id: r.id,
    bucket: r.bucket,
    status: r.status,
    mimeType: r.mime_type,
    objectKey: r.object_key,
    contentVersion: r.content_version,
    thumbnails: r.thumbnails,
    rejectionReason: r.rejection_reason,
  };
};

export interface Owner {
  userId: string;
  email: string;
}

/**
 * Who hears about an infected upload: the tenant's Owners, as the kernel's directory of people
 * tells them by default (identity's members, roles and accounts) — a port, so a test may install
 * another.
 */
export interface OwnerDirectory {
  owners(q: Queryable, tenantId: string): Promise<Owner[]>;
}
