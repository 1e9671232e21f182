import type { Bucket, FileStatus, PresetName } from '../../domain/files/constants';
import { filesErrors } from '../../domain/files/errors';
import type { Thumbnail } from '../../domain/files/file';
import { RawJson } from '../../domain/shared/json';
import type { Linker } from '../../domain/files/links';
import type { FileView, JobView } from '../../domain/files/views';
import type { Queryable } from '../../infra/postgres/db';

/** typed reads of the files read model; every query is filtered by the caller's tenant */
export interface FileRow {
  tenant_id: string;
  id: string;
  bucket: Bucket;
  original_name: string;
  mime_type: string;
  size_bytes: string;
  meta: string;
  status: FileStatus | 'purged';
  via: 'upload' | 'presign';
  staging_key: string;
  upload_by: Date | null;
  object_key: string | null;
  content_version: number;
  scan_status: 'clean' | 'skipped' | null;
  thumbnails: Partial<Record<PresetName, Thumbnail>>;
  uploaded_by: string;
  created_at: Date;
  released_at: Date | null;
  deleted_at: Date | null;
  orphaned_at: Date | null;
  rejection_reason: string | null;
}
const COLUMNS = `tenant_id, id, bucket, original_name, mime_type, size_bytes::text, meta, status, via, staging_key, upload_by, object_key, content_version,
  scan_status, thumbnails, uploaded_by, created_at, released_at, deleted_at, orphaned_at, rejection_reason`;

export const fileView = (r: FileRow, link: Linker): FileView => {
  const available = r.status === 'available';
  return {
    id: r.id,
    originalName: r.original_name,
    mimeType: r.mime_type,
    size: Number(r.size_bytes),
    bucket: r.bucket,
    status: r.status === 'purged' ? 'deleted' : r.status,
    url: available ? link(r.id, 'original') : null,
    thumbnails: available
      ? Object.fromEntries(Object.keys(r.thumbnails).map((preset) => [preset, link(r.id, preset as PresetName)]))
      : {},
    uploadedBy: r.uploaded_by,
    tenantId: r.tenant_id,
    createdAt: r.created_at.toISOString(),
    deletedAt: r.deleted_at?.toISOString() ?? null,
    scanStatus: r.scan_status,
    meta: new RawJson(r.meta),
  };
};

/** the tenant's file, purged ones included (callers decide what each status answers), or null */
export const findFile = async (q: Queryable, tenantId: string, id: string): Promise<FileRow | null> => {
  const { rows } = await q.query<FileRow>(`SELECT ${COLUMNS} FROM rm.files_files WHERE tenant_id = $1 AND id = $2`, [
    tenantId,
    id,
  ]);
  return rows[0] ?? null;
};

/** an available file of the tenant: 404 for unknown, pending, trashed or purged, 422 for rejected */
export const availableFile = async (
  q: Queryable,
  tenantId: string,
  id: string,
): Promise<FileRow & { object_key: string }> => {
  const row = await findFile(q, tenantId, id);
  if (row?.status === 'rejected') throw filesErrors.fileRejected(row.rejection_reason ?? 'rejected');
  if (!row || row.status !== 'available' || !row.object_key) throw filesErrors.fileNotFound();
  return { ...row, object_key: row.object_key };
};

export interface FileFilter {
  bucket?: Bucket;
  status?: FileStatus;
  uploadedBy?: string;
  after?: { createdAt: string; id: string };
  limit: number;
}

/** newest first; without a status filter the trash is left out (ask for status=deleted to see it) */
export const listFiles = async (q: Queryable, tenantId: string, f: FileFilter): Promise<FileRow[]> => {
  const params: unknown[] = [tenantId, f.limit];
  const where = ['tenant_id = $1', "status <> 'purged'"];
  const add = (clause: string, value: unknown) => {
    params.push(value);
    where.push(clause.replace('?', `$${params.length}`));
  };
  if (f.status) add('status = ?', f.status);
  else where.push("status <> 'deleted'");
  if (f.bucket) add('bucket = ?', f.bucket);
  if (f.uploadedBy) add('uploaded_by = ?', f.uploadedBy);
  if (f.after) {
    params.push(f.after.createdAt, f.after.id);
    where.push(`(created_at, id) < ($${params.length - 1}::timestamptz, $${params.length})`);
  }
  const { rows } = await q.query<FileRow>(
    `SELECT ${COLUMNS} FROM rm.files_files WHERE ${where.join(' AND ')} ORDER BY created_at DESC, id DESC LIMIT $2`,
    params,
  );
  return rows;
};

/** the bytes a tenant stores (available and in the trash: a deleted file is still billed), thumbnails not counted */
export const storageBytes = async (q: Queryable, tenantId: string): Promise<number> =>
  Number(
    (
      await q.query<{ n: string }>(
        `SELECT COALESCE(sum(size_bytes), 0)::text AS n FROM rm.files_files WHERE tenant_id = $1 AND status IN ('available', 'deleted')`,
        [tenantId],
      )
    ).rows[0]?.n ?? 0,
  );

interface JobRow {
  id: string;
  file_id: string;
  status: JobView['status'];
  started_at: Date;
  finished_at: Date | null;
  error: string | null;
}

export const findJob = async (
  q: Queryable,
  tenantId: string,
  fileId: string,
  jobId: string,
): Promise<JobView | null> => {
  const { rows } = await q.query<JobRow>(
    `SELECT id, file_id, status, started_at, finished_at, error FROM rm.files_jobs WHERE tenant_id = $1 AND file_id = $2 AND id = $3`,
    [tenantId, fileId, jobId],
  );
  const r = rows[0];
  return r
    ? {
        fileId: r.file_id,
        jobId: r.id,
        status: r.status,
        startedAt: r.started_at.toISOString(),
        finishedAt: r.finished_at?.toISOString() ?? null,
        error: r.error,
      }
    : null;
};
