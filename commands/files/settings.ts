import type { SizeLimits } from '../../domain/files/media';
import type { Config } from '../../infra/config';

/** the files variables of spec 002 (Limits), validated with the rest of the configuration (infra/config.ts) */
export interface FilesSettings {
  scan: 'clamd' | 'skip';
  stagingTtlMs: number;
  maxStagedPerTenant: number;
  presignTtlSeconds: number;
  /** a presigned upload's bytes may arrive this long after its form expired (a slow upload started in time) */
  presignGraceMs: number;
  limits: SizeLimits;
  processingTimeoutMs: number;
  maxPixels: number;
  retentionDays: number;
  orphanMinAgeMs: number;
  sweepIntervalMs: number;
  concurrency: number;
  pollMs: number;
  /** how long a claimed task is this worker's before another may take it */
  leaseMs: number;
  /** a scanner that is down is asked again after 2, 4, 8 … s, at most this long */
  maxRetryDelayMs: number;
}

const MB = 1_048_576;
const HOUR = 3600_000;

export const filesSettingsOf = (config: Config): FilesSettings => ({
  scan: config.FILES_SCAN,
  stagingTtlMs: config.FILES_STAGING_TTL_HOURS * HOUR,
  maxStagedPerTenant: config.FILES_STAGING_MAX_PER_TENANT,
  presignTtlSeconds: config.FILES_PRESIGN_TTL_MIN * 60,
  presignGraceMs: HOUR,
  limits: {
    imageBytes: Math.floor(config.FILES_MAX_IMAGE_SIZE_MB * MB),
    documentBytes: Math.floor(config.FILES_MAX_DOCUMENT_SIZE_MB * MB),
  },
  processingTimeoutMs: config.FILES_IMAGE_PROCESSING_TIMEOUT_SEC * 1000,
  maxPixels: config.FILES_IMAGE_MAX_PIXELS,
  retentionDays: config.FILES_SOFT_DELETE_RETENTION_DAYS,
  orphanMinAgeMs: config.FILES_ORPHAN_MIN_AGE_HOURS * HOUR,
  sweepIntervalMs: config.FILES_ORPHAN_SCAN_INTERVAL_HOURS * HOUR,
  concurrency: config.FILES_SCAN_CONCURRENCY,
  pollMs: config.FILES_WORKER_POLL_MS,
  leaseMs: 5 * 60_000,
  maxRetryDelayMs: 60_000,
});
