import { loadOverlay } from '../../commands/audit/anonymize';
import { archiveClosedMonths, purgeExpiredArchives, redactArchives } from '../../commands/audit/archive';
import { purgeExportJobs, runNextExportJob } from '../../commands/audit/exports';
import { purgeFallback, syncHotRetention } from '../../commands/audit/retention';
import type { Kernel } from '../../infra/kernel';

const HOUR_MS = 3600_000;
const EXPORT_FILES_KEPT_DAYS = 7;

/** completes the oldest pending anonymization: the tenant's cold archives rewritten under its overlay */
export const completeNextAnonymization = async (kernel: Kernel): Promise<boolean> => {
  const {
    rows: [next],
  } = await kernel.db.query<{ id: string; tenant_id: string }>(
    `SELECT id, tenant_id FROM audit.anonymizations WHERE status = 'pending' ORDER BY created_at LIMIT 1`,
  );
  if (!next) return false;
  const overlay = await loadOverlay(kernel, next.tenant_id);
  if (overlay) await redactArchives(kernel, next.tenant_id, overlay);
  await kernel.db.query(`UPDATE audit.anonymizations SET status = 'completed', completed_at = $2 WHERE id = $1`, [
    next.id,
    kernel.clock.now(),
  ]);
  return true;
};

/**
 * One turn of the audit service's housekeeping: pending anonymizations and export jobs at once;
 * once an hour the hot retention, the monthly archives, their expiry after AUDIT_COLD_YEARS, the
 * fallback table's 7 days and finished export files. Returns whether there may be more to do now.
 */
export const auditMaintenanceStep = (kernel: Kernel) => {
  let hourlyAt = 0;
  return async (signal?: AbortSignal): Promise<boolean> => {
    const now = kernel.clock.now();
    if (now.getTime() - hourlyAt >= HOUR_MS) {
      hourlyAt = now.getTime();
      await syncHotRetention(kernel);
      const archived = await archiveClosedMonths(kernel, now);
      const expired = await purgeExpiredArchives(kernel, now);
      await purgeFallback(kernel);
      await purgeExportJobs(kernel, EXPORT_FILES_KEPT_DAYS);
      if (archived.length || expired) kernel.logger.info({ archived: archived.length, expired }, 'audit archives');
    }
    const anonymized = await completeNextAnonymization(kernel);
    const exported = await runNextExportJob(kernel, signal);
    return anonymized || exported;
  };
};
