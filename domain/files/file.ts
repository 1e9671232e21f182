import type { Decider } from '../shared/decider';
import { assertNever } from '../shared/decider';
import type { Bucket, PresetName, PurgeReason, RejectionReason, ScanStatus } from './constants';
import { filesErrors } from './errors';
import type { FileEvent } from './events';
import type { Operation } from './operations';

export interface Thumbnail {
  objectKey: string;
  mimeType: string;
  width: number;
  height: number;
}

export interface Job {
  status: 'processing' | 'completed' | 'failed';
  startedAt: string;
  finishedAt: string | null;
  error: string | null;
}

/**
 * A file, from its staging to its permanent deletion (spec 002, File status). contentVersion
 * counts the contents the file has had (1 at release, +1 per processing); thumbnails belong to the
 * current one. At most MAX_JOBS jobs are remembered, so the state stays small.
 */
export type File =
  | { status: 'none' }
  | {
      status: 'pending_scan' | 'available' | 'rejected' | 'deleted' | 'purged';
      fileId: string;
      bucket: Bucket;
      originalName: string;
      mimeType: string;
      sizeBytes: number;
      meta: string;
      uploadedBy: string;
      createdAt: string;
      via: 'upload' | 'presign';
      stagingKey: string;
      uploadBy: string | null;
      objectKey: string | null;
      contentVersion: number;
      scanStatus: ScanStatus | null;
      thumbnails: Partial<Record<PresetName, Thumbnail>>;
      jobs: Record<string, Job>;
      rejection: { reason: RejectionReason; signature: string | null } | null;
      deletedAt: string | null;
      orphanedAt: string | null;
    };
export type KnownFile = Exclude<File, { status: 'none' }>;

const MAX_JOBS = 20;

export type FileCommand =
  | {
      type: 'Stage';
      fileId: string;
      tenantId: string;
      bucket: Bucket;
      originalName: string;
      mimeType: string;
      sizeBytes: number;
      meta: string;
      uploadedBy: string;
      via: 'upload' | 'presign';
      stagingKey: string;
      uploadBy: string | null;
      now: string;
    }
  | {
      type: 'Release';
      tenantId: string;
      objectKey: string;
      mimeType: string;
      sizeBytes: number;
      scanStatus: ScanStatus;
      now: string;
    }
  | {
      type: 'Reject';
      tenantId: string;
      reason: RejectionReason;
      signature: string | null;
      sizeBytes: number | null;
      now: string;
    }
  | { type: 'Delete'; tenantId: string; now: string; purgeAfter: string }
  /** restoreFrom: the oldest deletion that may still be restored (now minus the window) */
  | { type: 'Restore'; tenantId: string; now: string; restoreFrom: string; windowDays: number }
  | { type: 'Purge'; tenantId: string; reason: PurgeReason; now: string }
  | { type: 'AddThumbnail'; preset: PresetName; contentVersion: number; thumbnail: Thumbnail; now: string }
  | { type: 'StartProcessing'; jobId: string; operations: Operation[]; quality: number; now: string }
  | {
      type: 'CompleteProcessing';
      tenantId: string;
      jobId: string;
      objectKey: string;
      mimeType: string;
      sizeBytes: number;
      now: string;
    }
  | { type: 'FailProcessing'; jobId: string; reason: string; now: string }
  | { type: 'MarkOrphaned'; now: string; purgeAfter: string }
  | { type: 'ClearOrphan'; now: string };

/** what a client may see of a file: none, pending and purged files do not exist for it */
const requireVisible = (s: File): KnownFile => {
  if (s.status === 'none' || s.status === 'pending_scan' || s.status === 'purged') throw filesErrors.fileNotFound();
  if (s.status === 'rejected') throw filesErrors.fileRejected(s.rejection?.reason ?? 'rejected');
  return s;
};

const requireAvailable = (s: File): KnownFile => {
  const file = requireVisible(s);
  if (file.status !== 'available') throw filesErrors.fileNotFound();
  return file;
};

const stage = (c: Extract<FileCommand, { type: 'Stage' }>, s: File): FileEvent[] => {
  if (s.status !== 'none') return [];
  return [
    {
      type: 'files.file.staged',
      data: {
        fileId: c.fileId,
        bucket: c.bucket,
        originalName: c.originalName,
        mimeType: c.mimeType,
        sizeBytes: c.sizeBytes,
        meta: c.meta,
        uploadedBy: c.uploadedBy,
        via: c.via,
        stagingKey: c.stagingKey,
        createdAt: c.now,
        uploadBy: c.uploadBy,
      },
    },
  ];
};

/** a release or a rejection only ends a pending scan: a second verdict (two workers, a retry) changes nothing */
const release = (c: Extract<FileCommand, { type: 'Release' }>, s: File): FileEvent[] => {
  if (s.status !== 'pending_scan') return [];
  return [
    {
      type: 'files.file.uploaded',
      data: {
        fileId: s.fileId,
        tenantId: c.tenantId,
        bucket: s.bucket,
        mimeType: c.mimeType,
        sizeBytes: c.sizeBytes,
        objectKey: c.objectKey,
        scanStatus: c.scanStatus,
        uploadedBy: s.uploadedBy,
        releasedAt: c.now,
      },
    },
  ];
};

const reject = (c: Extract<FileCommand, { type: 'Reject' }>, s: File): FileEvent[] => {
  if (s.status !== 'pending_scan') return [];
  return [
    {
      type: 'files.file.rejected',
      data: {
        fileId: s.fileId,
        tenantId: c.tenantId,
        reason: c.reason,
        signature: c.signature,
        sizeBytes: c.sizeBytes ?? s.sizeBytes,
        rejectedAt: c.now,
      },
    },
  ];
};

const remove = (c: Extract<FileCommand, { type: 'Delete' }>, s: File): FileEvent[] => {
  const file = requireVisible(s);
  if (file.status === 'deleted') return [];
  return [
    {
      type: 'files.file.deleted',
      data: {
        fileId: file.fileId,
        tenantId: c.tenantId,
        sizeBytes: file.sizeBytes,
        deletedAt: c.now,
        purgeAfter: c.purgeAfter,
      },
    },
  ];
};

const restore = (c: Extract<FileCommand, { type: 'Restore' }>, s: File): FileEvent[] => {
  const file = requireVisible(s);
  if (file.status !== 'deleted' || file.deletedAt === null) throw filesErrors.fileNotDeleted();
  if (file.deletedAt < c.restoreFrom) throw filesErrors.fileRestoreExpired(c.windowDays);
  return [
    {
      type: 'files.file.restored',
      data: { fileId: file.fileId, tenantId: c.tenantId, sizeBytes: file.sizeBytes, restoredAt: c.now },
    },
  ];
};

const purge = (c: Extract<FileCommand, { type: 'Purge' }>, s: File): FileEvent[] => {
  if (s.status === 'purged') return [];
  const file = requireVisible(s);
  if (file.status !== 'available' && file.status !== 'deleted') return [];
  return [
    {
      type: 'files.file.permanent_deleted',
      data: {
        fileId: file.fileId,
        tenantId: c.tenantId,
        sizeBytes: file.sizeBytes,
        reason: c.reason,
        previousStatus: file.status,
        deletedAt: c.now,
      },
    },
  ];
};

/** a thumbnail of an earlier content (processed meanwhile), or one already there, is not recorded */
const addThumbnail = (c: Extract<FileCommand, { type: 'AddThumbnail' }>, s: File): FileEvent[] => {
  if (s.status !== 'available' || s.contentVersion !== c.contentVersion || s.thumbnails[c.preset]) return [];
  return [
    {
      type: 'files.file.thumbnail_created',
      data: { fileId: s.fileId, preset: c.preset, ...c.thumbnail, contentVersion: c.contentVersion, createdAt: c.now },
    },
  ];
};

const startProcessing = (c: Extract<FileCommand, { type: 'StartProcessing' }>, s: File): FileEvent[] => {
  const file = requireAvailable(s);
  if (file.jobs[c.jobId]) return [];
  return [
    {
      type: 'files.file.processing_started',
      data: { fileId: file.fileId, jobId: c.jobId, operations: c.operations, quality: c.quality, startedAt: c.now },
    },
  ];
};

/** a job ends once; a file deleted meanwhile keeps its content (the job fails) */
const completeProcessing = (c: Extract<FileCommand, { type: 'CompleteProcessing' }>, s: File): FileEvent[] => {
  if (s.status === 'none' || s.jobs[c.jobId]?.status !== 'processing') return [];
  if (s.status !== 'available')
    return [
      {
        type: 'files.file.processing_failed',
        data: { fileId: s.fileId, jobId: c.jobId, reason: `the file is ${s.status}`, failedAt: c.now },
      },
    ];
  return [
    {
      type: 'files.file.processed',
      data: {
        fileId: s.fileId,
        tenantId: c.tenantId,
        jobId: c.jobId,
        objectKey: c.objectKey,
        mimeType: c.mimeType,
        sizeBytes: c.sizeBytes,
        previousSizeBytes: s.sizeBytes,
        contentVersion: s.contentVersion + 1,
        completedAt: c.now,
      },
    },
  ];
};

const failProcessing = (c: Extract<FileCommand, { type: 'FailProcessing' }>, s: File): FileEvent[] => {
  if (s.status === 'none' || s.jobs[c.jobId]?.status !== 'processing') return [];
  return [
    {
      type: 'files.file.processing_failed',
      data: { fileId: s.fileId, jobId: c.jobId, reason: c.reason, failedAt: c.now },
    },
  ];
};

const markOrphaned = (c: Extract<FileCommand, { type: 'MarkOrphaned' }>, s: File): FileEvent[] =>
  s.status === 'available' && s.orphanedAt === null
    ? [{ type: 'files.file.orphaned', data: { fileId: s.fileId, orphanedAt: c.now, purgeAfter: c.purgeAfter } }]
    : [];

const clearOrphan = (c: Extract<FileCommand, { type: 'ClearOrphan' }>, s: File): FileEvent[] =>
  s.status !== 'none' && s.orphanedAt !== null
    ? [{ type: 'files.file.orphan_cleared', data: { fileId: s.fileId, clearedAt: c.now } }]
    : [];

const withJob = (s: KnownFile, jobId: string, job: Job): Record<string, Job> => {
  const jobs = { ...s.jobs, [jobId]: job };
  const ids = Object.keys(jobs);
  // the oldest finished jobs go first when there are too many (ids are UUID v7: ordered by time)
  for (const id of ids.sort()) {
    if (Object.keys(jobs).length <= MAX_JOBS) break;
    if (jobs[id]!.status !== 'processing') delete jobs[id];
  }
  return jobs;
};

const evolve = (s: File, e: FileEvent): File => {
  if (e.type === 'files.file.staged') {
    const d = e.data;
    return {
      status: 'pending_scan',
      fileId: d.fileId,
      bucket: d.bucket,
      originalName: d.originalName,
      mimeType: d.mimeType,
      sizeBytes: d.sizeBytes,
      meta: d.meta,
      uploadedBy: d.uploadedBy,
      createdAt: d.createdAt,
      via: d.via,
      stagingKey: d.stagingKey,
      uploadBy: d.uploadBy,
      objectKey: null,
      contentVersion: 0,
      scanStatus: null,
      thumbnails: {},
      jobs: {},
      rejection: null,
      deletedAt: null,
      orphanedAt: null,
    };
  }
  if (s.status === 'none') return s;
  switch (e.type) {
    case 'files.file.uploaded':
      return {
        ...s,
        status: 'available',
        objectKey: e.data.objectKey,
        mimeType: e.data.mimeType,
        sizeBytes: e.data.sizeBytes,
        scanStatus: e.data.scanStatus,
        contentVersion: 1,
      };
    case 'files.file.rejected':
      return { ...s, status: 'rejected', rejection: { reason: e.data.reason, signature: e.data.signature } };
    case 'files.file.deleted':
      return { ...s, status: 'deleted', deletedAt: e.data.deletedAt };
    case 'files.file.restored':
      return { ...s, status: 'available', deletedAt: null };
    case 'files.file.permanent_deleted':
      return { ...s, status: 'purged', thumbnails: {} };
    case 'files.file.thumbnail_created': {
      const { objectKey, mimeType, width, height } = e.data;
      return { ...s, thumbnails: { ...s.thumbnails, [e.data.preset]: { objectKey, mimeType, width, height } } };
    }
    case 'files.file.processing_started':
      return {
        ...s,
        jobs: withJob(s, e.data.jobId, {
          status: 'processing',
          startedAt: e.data.startedAt,
          finishedAt: null,
          error: null,
        }),
      };
    case 'files.file.processed':
      return {
        ...s,
        objectKey: e.data.objectKey,
        mimeType: e.data.mimeType,
        sizeBytes: e.data.sizeBytes,
        contentVersion: e.data.contentVersion,
        thumbnails: {},
        jobs: withJob(s, e.data.jobId, {
          ...s.jobs[e.data.jobId]!,
          status: 'completed',
          finishedAt: e.data.completedAt,
        }),
      };
    case 'files.file.processing_failed':
      return {
        ...s,
        jobs: withJob(s, e.data.jobId, {
          ...s.jobs[e.data.jobId]!,
          status: 'failed',
          finishedAt: e.data.failedAt,
          error: e.data.reason,
        }),
      };
    case 'files.file.orphaned':
      return { ...s, orphanedAt: e.data.orphanedAt };
    case 'files.file.orphan_cleared':
      return { ...s, orphanedAt: null };
    default:
      return assertNever(e);
  }
};

export const fileDecider: Decider<File, FileCommand, FileEvent> = {
  initialState: () => ({ status: 'none' }),
  evolve,
  decide: (c, s) => {
    switch (c.type) {
      case 'Stage':
        return stage(c, s);
      case 'Release':
        return release(c, s);
      case 'Reject':
        return reject(c, s);
      case 'Delete':
        return remove(c, s);
      case 'Restore':
        return restore(c, s);
      case 'Purge':
        return purge(c, s);
      case 'AddThumbnail':
        return addThumbnail(c, s);
      case 'StartProcessing':
        return startProcessing(c, s);
      case 'CompleteProcessing':
        return completeProcessing(c, s);
      case 'FailProcessing':
        return failProcessing(c, s);
      case 'MarkOrphaned':
        return markOrphaned(c, s);
      case 'ClearOrphan':
        return clearOrphan(c, s);
      default:
        return assertNever(c);
    }
  },
};
