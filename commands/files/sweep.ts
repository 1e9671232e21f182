import type { Bucket } from '../../domain/files/constants';
import { systemMeta } from '../../infra/kernel';
import { FileAggregate, fileStream } from './aggregates';
import type { FilesContext } from './context';
import { removeLeftoverDoomed } from './doomed';
import { purgeFile } from './handlers';
import { parseStagingKey, STAGING_PREFIX } from './keys';
import { scanStaged } from './scanning';

const BATCH = 500;
const DAY_MS = 86_400_000;

export interface SweepReport {
  stagingExpired: number;
  trashPurged: number;
  orphaned: number;
  orphansPurged: number;
  orphansCleared: number;
  strayStagingObjects: number;
  doomedRemoved: number;
}

/** whether this process runs the sweep now: once per interval across every workers process */
export const claimSweep = async (ctx: FilesContext, name: string): Promise<boolean> => {
  const now = ctx.kernel.clock.now();
  const { rowCount } = await ctx.kernel.db.query(
    `INSERT INTO files.sweeps (name, last_run) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET last_run = EXCLUDED.last_run WHERE files.sweeps.last_run <= $3`,
    [name, now, new Date(now.getTime() - ctx.settings.sweepIntervalMs)],
  );
  return (rowCount ?? 0) > 0;
};

interface Candidate {
  tenant_id: string;
  id: string;
  bucket: Bucket;
}

const candidates = async (ctx: FilesContext, where: string, values: unknown[]): Promise<Candidate[]> =>
  (
    await ctx.kernel.db.query<Candidate>(
      `SELECT tenant_id, id, bucket FROM rm.files_files WHERE ${where} ORDER BY created_at LIMIT ${BATCH}`,
      values,
    )
  ).rows;

const byTenant = (rows: Candidate[]): Map<string, Candidate[]> => {
  const groups = new Map<string, Candidate[]>();
  for (const row of rows) groups.set(row.tenant_id, [...(groups.get(row.tenant_id) ?? []), row]);
  return groups;
};

/** each step alone: one file's failure is logged and the sweep goes on */
const each = async <T>(ctx: FilesContext, items: T[], step: (item: T) => Promise<boolean>): Promise<number> => {
  let done = 0;
  for (const item of items) {
    try {
      if (await step(item)) done += 1;
    } catch (error) {
      ctx.kernel.logger.warn({ err: error, item }, 'files sweep: a step failed; retried at the next sweep');
    }
  }
  return done;
};

/**
 * The daily maintenance of spec 002: staged files older than the staging TTL are rejected; files
 * in the trash longer than the restore window are deleted for good; available files older than
 * FILES_ORPHAN_MIN_AGE_HOURS that nothing refers to are marked orphaned, and deleted for good
 * (audit files.orphan.deleted) once orphaned for the restore window unless referenced again;
 * staging objects no pending file owns are removed; objects whose removal failed are retried.
 */
export const sweepFiles = async (ctx: FilesContext): Promise<SweepReport> => {
  const { kernel, settings } = ctx;
  const now = kernel.clock.now();
  const windowAgo = new Date(now.getTime() - settings.retentionDays * DAY_MS);
  const report: SweepReport = {
    stagingExpired: 0,
    trashPurged: 0,
    orphaned: 0,
    orphansPurged: 0,
    orphansCleared: 0,
    strayStagingObjects: 0,
    doomedRemoved: 0,
  };

  const stale = await candidates(ctx, `status = 'pending_scan' AND created_at < $1`, [
    new Date(now.getTime() - settings.stagingTtlMs),
  ]);
  report.stagingExpired = await each(
    ctx,
    stale,
    async (f) =>
      (await scanStaged(ctx, {
        kind: 'scan',
        tenantId: f.tenant_id,
        fileId: f.id,
        jobId: '',
        createdAt: now,
        attempts: 0,
      })) === 'rejected',
  );

  const trash = await candidates(ctx, `status = 'deleted' AND deleted_at < $1`, [windowAgo]);
  report.trashPurged = await each(ctx, trash, (f) =>
    kernel.commands.run(systemMeta(f.tenant_id), (uow) => purgeFile(uow, ctx, f.id, 'trash-expired')),
  );

  const young = await candidates(ctx, `status = 'available' AND orphaned_at IS NULL AND created_at < $1`, [
    new Date(now.getTime() - settings.orphanMinAgeMs),
  ]);
  for (const [tenantId, files] of byTenant(young)) {
    const unreferenced = await ctx.references.unreferenced(kernel.db, tenantId, files);
    const purgeAfter = new Date(now.getTime() + settings.retentionDays * DAY_MS).toISOString();
    report.orphaned += await each(
      ctx,
      files.filter((f) => unreferenced.has(f.id)),
      (f) =>
        kernel.commands.run(
          systemMeta(tenantId),
          async (uow) =>
            uow.decide(FileAggregate, await uow.load(FileAggregate, fileStream(tenantId, f.id)), {
              type: 'MarkOrphaned',
              now: now.toISOString(),
              purgeAfter,
            }).events.length > 0,
        ),
    );
  }

  const orphans = await candidates(ctx, `status = 'available' AND orphaned_at < $1`, [windowAgo]);
  for (const [tenantId, files] of byTenant(orphans)) {
    const unreferenced = await ctx.references.unreferenced(kernel.db, tenantId, files);
    report.orphansPurged += await each(
      ctx,
      files.filter((f) => unreferenced.has(f.id)),
      (f) => kernel.commands.run(systemMeta(tenantId), (uow) => purgeFile(uow, ctx, f.id, 'orphaned')),
    );
    report.orphansCleared += await each(
      ctx,
      files.filter((f) => !unreferenced.has(f.id)),
      (f) =>
        kernel.commands.run(
          systemMeta(tenantId),
          async (uow) =>
            uow.decide(FileAggregate, await uow.load(FileAggregate, fileStream(tenantId, f.id)), {
              type: 'ClearOrphan',
              now: now.toISOString(),
            }).events.length > 0,
        ),
    );
  }

  report.strayStagingObjects = await removeStrayStaging(ctx, now);
  report.doomedRemoved = await removeLeftoverDoomed(ctx);
  return report;
};

/** staging objects older than the staging TTL that no pending file owns (an upload cut off before it was recorded) */
const removeStrayStaging = async (ctx: FilesContext, now: Date): Promise<number> => {
  const cutoff = now.getTime() - ctx.settings.stagingTtlMs;
  let removed = 0;
  let startAfter: string | undefined;
  for (let pages = 0; pages < 100; pages += 1) {
    const page = await ctx.objects.list(STAGING_PREFIX, { startAfter, limit: BATCH });
    for (const object of page.objects.filter((o) => o.lastModified.getTime() < cutoff)) {
      const owner = parseStagingKey(object.key);
      const pending =
        owner &&
        (
          await ctx.kernel.db.query(
            `SELECT 1 FROM rm.files_files WHERE tenant_id = $1 AND id = $2 AND status = 'pending_scan'`,
            [owner.tenantId, owner.fileId],
          )
        ).rowCount;
      if (pending) continue;
      await ctx.objects.delete(object.key);
      removed += 1;
    }
    if (!page.more || page.objects.length === 0) break;
    startAfter = page.objects[page.objects.length - 1]!.key;
  }
  return removed;
};
