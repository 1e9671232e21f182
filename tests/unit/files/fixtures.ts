import type { FileCommand } from '../../../domain/files/file';
import { fileDecider } from '../../../domain/files/file';
import { commandScenario } from '../../support/decider-scenario';

export const T = 'tenant-1';
export const F = '01900000-0000-7000-8000-000000000001';
export const T0 = '2025-01-01T00:00:00.000Z';
export const at = (days: number): string => new Date(Date.parse(T0) + days * 86_400_000).toISOString();

export const stage = (overrides: Partial<Extract<FileCommand, { type: 'Stage' }>> = {}): FileCommand => ({
  type: 'Stage',
  fileId: F,
  tenantId: T,
  bucket: 'documents',
  originalName: 'report.pdf',
  mimeType: 'application/pdf',
  sizeBytes: 1000,
  meta: '{}',
  uploadedBy: 'u-1',
  via: 'upload',
  stagingKey: `_staging/${T}/${F}`,
  uploadBy: null,
  now: T0,
  ...overrides,
});
export const release = (now = at(0)): FileCommand => ({
  type: 'Release',
  tenantId: T,
  objectKey: `${T}/documents/${F}/v1`,
  mimeType: 'application/pdf',
  sizeBytes: 1000,
  scanStatus: 'clean',
  now,
});
export const reject = (reason: 'infected' | 'staging-expired' = 'infected'): FileCommand => ({
  type: 'Reject',
  tenantId: T,
  reason,
  signature: reason === 'infected' ? 'Eicar-Test-Signature' : null,
  sizeBytes: null,
  now: at(0),
});
export const remove = (now = at(1)): FileCommand => ({ type: 'Delete', tenantId: T, now, purgeAfter: at(31) });
export const restore = (now: string): FileCommand => ({
  type: 'Restore',
  tenantId: T,
  now,
  restoreFrom: new Date(Date.parse(now) - 30 * 86_400_000).toISOString(),
  windowDays: 30,
});
export const purge = (reason: 'requested' | 'trash-expired' | 'orphaned' = 'requested'): FileCommand => ({
  type: 'Purge',
  tenantId: T,
  reason,
  now: at(2),
});
export const thumbnail = (preset: 'icon_32' | 'card_300', contentVersion = 1): FileCommand => ({
  type: 'AddThumbnail',
  preset,
  contentVersion,
  now: at(0),
  thumbnail: {
    objectKey: `${T}/documents/${F}/v${contentVersion}-${preset}`,
    mimeType: 'image/webp',
    width: 32,
    height: 32,
  },
});
export const startJob = (jobId = 'j-1'): FileCommand => ({
  type: 'StartProcessing',
  jobId,
  operations: [{ type: 'rotate', degrees: 90 }],
  quality: 85,
  now: at(0),
});
export const completeJob = (jobId = 'j-1'): FileCommand => ({
  type: 'CompleteProcessing',
  tenantId: T,
  jobId,
  objectKey: `${T}/documents/${F}/v2`,
  mimeType: 'image/png',
  sizeBytes: 700,
  now: at(0),
});
export const failJob = (jobId = 'j-1'): FileCommand => ({
  type: 'FailProcessing',
  jobId,
  reason: 'timeout',
  now: at(0),
});

/** file histories written as commands, and given / when / then over them */
export const { history, given } = commandScenario(fileDecider);
