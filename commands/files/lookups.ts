import type { Bucket, FileStatus, PresetName } from '../../domain/files/constants';
import type { Thumbnail } from '../../domain/files/file';
import type { Queryable } from '../../infra/postgres/db';
import { availableFile as availableRow } from '../../projections/files/queries';

/**
 * What the files commands read of read models (a file's row is the read side's query,
 * projections/files/queries.ts, mapped to what the commands use): every query is filtered by the
 * caller's tenant.
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

/** an available file of the tenant as the read model has it (the read side's query): 404 for unknown, pending, trashed or purged, 422 for rejected */
export const availableFile = async (q: Queryable, tenantId: string, fileId: string): Promise<AvailableFile> => {
  const r = await availableRow(q, tenantId, fileId);
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
