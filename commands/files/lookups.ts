import type { Bucket, FileStatus, PresetName } from '../../domain/files/constants';
import type { Thumbnail } from '../../domain/files/file';
import { OWNER_ROLE, PLATFORM_TENANT_ID } from '../../domain/identity/constants';
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
 * Who hears about an infected upload: the tenant's Owners, read from identity's read models
 * (members, roles, accounts) — a port, so a files platform without identity installs another.
 */
export interface OwnerDirectory {
  owners(q: Queryable, tenantId: string): Promise<Owner[]>;
}

export const identityOwners: OwnerDirectory = {
  owners: async (q, tenantId) =>
    (
      await q.query<{ user_id: string; email: string }>(
        `SELECT DISTINCT m.user_id, a.email FROM rm.iam_members m
       JOIN rm.iam_roles r ON r.tenant_id = m.tenant_id AND r.id = ANY(m.role_ids) AND r.name = $2
       JOIN rm.iam_accounts a ON a.tenant_id = $3 AND a.id = m.user_id
     WHERE m.tenant_id = $1 AND m.status = 'active' AND a.status = 'active' ORDER BY a.email`,
        [tenantId, OWNER_ROLE, PLATFORM_TENANT_ID],
      )
    ).rows.map((r) => ({ userId: r.user_id, email: r.email })),
};
