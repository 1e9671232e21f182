import type { StoredEvent } from '../../domain/shared/event';
import { FileEvent, fileEventTypes } from '../../domain/files/events';
import { defineProjections } from '../../infra/services';
import type { Projection, Statement } from '../../infra/projections/projection';
import { sql } from '../../infra/projections/projection';

/**
 * The files read model, inline (readable right after the write: the upload answers with the file,
 * the staging limit counts exactly). One row per file, kept as a tombstone (status purged) once
 * deleted for good, so a late or replayed event cannot bring it back; every update is guarded by
 * the stream version. Jobs of image processing have a table of their own.
 */
const fileRow = (t: string, stored: StoredEvent<Record<string, unknown>>, e: FileEvent): Statement[] => {
  const v = stored.streamVersion;
  const tenant = stored.tenantId;
  const update = (set: string | null, ...values: unknown[]) =>
    sql(
      `UPDATE ${t} SET ${set ? `${set}, ` : ''}version = $3 WHERE tenant_id = $1 AND id = $2 AND version < $3`,
      tenant,
      e.data.fileId,
      v,
      ...values,
    );
  switch (e.type) {
    case 'files.file.staged': {
      const d = e.data;
      return [
        sql(
          `INSERT INTO ${t} (tenant_id, id, bucket, original_name, mime_type, size_bytes, meta, status, via, staging_key, upload_by, uploaded_by, created_at, version)
        VALUES ($1, $2, $3, $4, $5, $6, $7, 'pending_scan', $8, $9, $10, $11, $12, $13) ON CONFLICT (tenant_id, id) DO NOTHING`,
          tenant,
          d.fileId,
          d.bucket,
          d.originalName,
          d.mimeType,
          d.sizeBytes,
          d.meta,
          d.via,
          d.stagingKey,
          d.uploadBy,
          d.uploadedBy,
          d.createdAt,
          v,
        ),
      ];
    }
    case 'files.file.uploaded':
      return [
        update(
          `status = 'available', object_key = $4, mime_type = $5, size_bytes = $6, scan_status = $7, released_at = $8, content_version = 1`,
          e.data.objectKey,
          e.data.mimeType,
          e.data.sizeBytes,
          e.data.scanStatus,
          e.data.releasedAt,
        ),
      ];
    case 'files.file.rejected':
      return [
        update(
          `status = 'rejected', rejection_reason = $4, rejection_signature = $5, size_bytes = $6`,
          e.data.reason,
          e.data.signature,
          e.data.sizeBytes,
        ),
      ];
    case 'files.file.deleted':
      return [update(`status = 'deleted', deleted_at = $4`, e.data.deletedAt)];
    case 'files.file.restored':
      return [update(`status = 'available', deleted_at = NULL`)];
    case 'files.file.permanent_deleted':
      return [update(`status = 'purged', thumbnails = '{}'::jsonb, purged_at = $4`, e.data.deletedAt)];
    case 'files.file.thumbnail_created': {
      const { preset, objectKey, mimeType, width, height } = e.data;
      return [
        update(
          `thumbnails = thumbnails || jsonb_build_object($4::text, $5::jsonb)`,
          preset,
          JSON.stringify({ objectKey, mimeType, width, height }),
        ),
      ];
    }
    case 'files.file.processed':
      return [
        update(
          `object_key = $4, mime_type = $5, size_bytes = $6, content_version = $7, thumbnails = '{}'::jsonb`,
          e.data.objectKey,
          e.data.mimeType,
          e.data.sizeBytes,
          e.data.contentVersion,
        ),
      ];
    case 'files.file.orphaned':
      return [update(`orphaned_at = $4`, e.data.orphanedAt)];
    case 'files.file.orphan_cleared':
      return [update(`orphaned_at = NULL`)];
    case 'files.file.processing_started':
    case 'files.file.processing_failed':
      // the version moves on, so later updates of this row stay in order
      return [update(null)];
    default:
      return [];
  }
};

const jobRow = (t: string, stored: StoredEvent<Record<string, unknown>>, e: FileEvent): Statement[] => {
  const tenant = stored.tenantId;
  switch (e.type) {
    case 'files.file.processing_started':
      return [
        sql(
          `INSERT INTO ${t} (tenant_id, id, file_id, status, operations, quality, started_at) VALUES ($1, $2, $3, 'processing', $4::jsonb, $5, $6)
        ON CONFLICT (tenant_id, id) DO NOTHING`,
          tenant,
          e.data.jobId,
          e.data.fileId,
          JSON.stringify(e.data.operations),
          e.data.quality,
          e.data.startedAt,
        ),
      ];
    case 'files.file.processed':
      return [
        sql(
          `UPDATE ${t} SET status = 'completed', finished_at = $3 WHERE tenant_id = $1 AND id = $2 AND status = 'processing'`,
          tenant,
          e.data.jobId,
          e.data.completedAt,
        ),
      ];
    case 'files.file.processing_failed':
      return [
        sql(
          `UPDATE ${t} SET status = 'failed', finished_at = $3, error = $4 WHERE tenant_id = $1 AND id = $2 AND status = 'processing'`,
          tenant,
          e.data.jobId,
          e.data.failedAt,
          e.data.reason,
        ),
      ];
    default:
      return [];
  }
};

export const filesProjection: Projection<'files_files' | 'files_jobs'> = {
  name: 'files.files',
  version: 1,
  mode: 'inline',
  handles: fileEventTypes,
  tables: {
    files_files: (t) => [
      `CREATE TABLE ${t} (tenant_id text NOT NULL, id text NOT NULL, bucket text NOT NULL, original_name text NOT NULL, mime_type text NOT NULL,
        size_bytes bigint NOT NULL, meta text NOT NULL, status text NOT NULL, via text NOT NULL, staging_key text NOT NULL, upload_by timestamptz,
        object_key text, content_version int NOT NULL DEFAULT 0, scan_status text, thumbnails jsonb NOT NULL DEFAULT '{}'::jsonb,
        uploaded_by text NOT NULL, created_at timestamptz NOT NULL, released_at timestamptz, deleted_at timestamptz, purged_at timestamptz,
        orphaned_at timestamptz, rejection_reason text, rejection_signature text, version int NOT NULL, PRIMARY KEY (tenant_id, id))`,
      `CREATE INDEX ON ${t} (tenant_id, created_at DESC, id DESC) WHERE status <> 'purged'`,
      `CREATE INDEX ON ${t} (tenant_id, status)`,
      // the maintenance worker's sweeps: staged too long, in the trash too long, candidates for orphans
      `CREATE INDEX ON ${t} (status, created_at)`,
      `CREATE INDEX ON ${t} (deleted_at) WHERE status = 'deleted'`,
    ],
    files_jobs: (t) => [
      `CREATE TABLE ${t} (tenant_id text NOT NULL, id text NOT NULL, file_id text NOT NULL, status text NOT NULL, operations jsonb NOT NULL, quality int NOT NULL,
        started_at timestamptz NOT NULL, finished_at timestamptz, error text, PRIMARY KEY (tenant_id, id))`,
    ],
  },
  evolve: (stored, t) => {
    const e = FileEvent.parse({ type: stored.type, data: stored.data });
    return [...fileRow(t.files_files, stored, e), ...jobRow(t.files_jobs, stored, e)];
  },
};

export default defineProjections({ projections: [filesProjection] });
