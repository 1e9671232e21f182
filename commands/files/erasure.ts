import { BUCKETS } from '../../domain/files/constants';
import { ERASURE_RULES } from '../../domain/shared/erasure';
import type { Eraser } from '../../infra/erasure';
import { deleteTenantRows, deleteTenantStreams } from '../../infra/erasure';
import type { Kernel } from '../../infra/kernel';
import { inTransaction } from '../../infra/postgres/db';
import { STAGING_PREFIX } from './keys';

/** removes every object under a prefix, page by page (S3 lists at most 1000 keys at a time) */
const removeAll = async (kernel: Kernel, prefix: string): Promise<void> => {
  for (;;) {
    const page = await kernel.engines.objects.list(prefix, { limit: 500 });
    if (page.objects.length === 0) return;
    for (const o of page.objects) await kernel.engines.objects.delete(o.key);
  }
};

/**
 * The files service's rule (README, Termination): in deleting_files, every object of the tenant
 * (contents of every version, thumbnails, staged uploads: all under `<tenantId>/<bucket>/` and
 * `_staging/<tenantId>/`), then its files (read models, streams), jobs and tasks. The objects go
 * first and outside any transaction (no transaction open across the object store); a crash in
 * between erases again.
 */
export const filesEraser: Eraser = {
  domain: 'files',
  phase: ERASURE_RULES.files,
  erase: async (kernel, tenantId) => {
    for (const bucket of BUCKETS) await removeAll(kernel, `${tenantId}/${bucket}/`);
    await removeAll(kernel, `${STAGING_PREFIX}${tenantId}/`);
    await inTransaction(kernel.db, async (tx) => {
      await deleteTenantRows(tx, tenantId, ['files.tasks', 'files.doomed_objects', 'rm.files_jobs', 'rm.files_files']);
      await deleteTenantStreams(tx, tenantId, ['files.file']);
    });
  },
};
