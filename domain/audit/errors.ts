import { defineErrors } from '../shared/errors';

/** The audit catalog (spec 002, Errors/Audit). */
export const auditErrors = defineErrors({
  recordNotFound: () => ({
    status: 404,
    suffix: 'audit-record-not-found',
    title: 'Audit record not found',
    detail: 'The audit record does not exist.',
  }),
  batchLimitExceeded: (max: number, got: number) => ({
    status: 400,
    suffix: 'batch-limit-exceeded',
    title: 'Batch limit exceeded',
    detail: `A batch holds at most ${max} records; this one has ${got}.`,
    extensions: { max, got },
  }),
  exportRangeTooLarge: (maxDays: number) => ({
    status: 400,
    suffix: 'export-range-too-large',
    title: 'Export range too large',
    detail: `An export of hot records covers at most ${maxDays} days; narrow since/until.`,
    extensions: { maxDays },
  }),
  anonymizeConflict: (userId: string) => ({
    status: 409,
    suffix: 'anonymize-conflict',
    title: 'Anonymization conflict',
    detail: `The user ${userId} is anonymized already, or being anonymized.`,
  }),
  anonymizeFinancialRecord: () => ({
    status: 403,
    suffix: 'anonymize-financial-record',
    title: 'Financial records are never anonymized',
    detail: 'Only financial (money.*) records name this user; financial records are never anonymized.',
  }),
  userNotFound: () => ({
    status: 404,
    suffix: 'not-found',
    title: 'Not found',
    detail: 'The user is not known to this tenant.',
  }),
  exportJobNotFound: () => ({
    status: 404,
    suffix: 'not-found',
    title: 'Not found',
    detail: 'The export job does not exist.',
  }),
  exportJobNotReady: (status: string) => ({
    status: 409,
    suffix: 'conflict',
    title: 'Export not ready',
    detail: `The export job is ${status}; its file is ready once the status is completed.`,
    extensions: { status },
    headers: { 'Retry-After': '5' },
  }),
  anonymizationPending: () => ({
    status: 503,
    suffix: 'service-unavailable',
    title: 'Anonymization in progress',
    detail: 'An anonymization of this tenant is still being applied; an export waits for it. Retry shortly.',
    extensions: { code: 'ANONYMIZATION_PENDING', retryAfter: 5 },
    headers: { 'Retry-After': '5' },
  }),
});
