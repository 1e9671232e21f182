import type { FilesContext } from './context';
import { forgetDoomed } from './tasks';

/**
 * Removes objects whose file no longer needs them, and forgets those removed; a key the store
 * refused now stays in files.doomed_objects for the maintenance worker's next sweep.
 */
export const removeDoomed = async (ctx: FilesContext, keys: string[]): Promise<number> => {
  const removed: string[] = [];
  for (const key of keys) {
    try {
      await ctx.objects.delete(key);
      removed.push(key);
    } catch (error) {
      ctx.kernel.logger.warn(
        { err: error, key },
        'an object of a deleted file could not be removed yet; the maintenance sweep retries',
      );
    }
  }
  await forgetDoomed(ctx.kernel.db, removed);
  return removed.length;
};

/** the sweep: objects still doomed (their removal failed after the commit), oldest first */
export const removeLeftoverDoomed = async (ctx: FilesContext, limit = 500): Promise<number> => {
  const { rows } = await ctx.kernel.db.query<{ key: string }>(
    'UPDATE files.doomed_objects SET attempts = attempts + 1 WHERE key IN (SELECT key FROM files.doomed_objects ORDER BY created_at LIMIT $1) RETURNING key',
    [limit],
  );
  return removeDoomed(
    ctx,
    rows.map((r) => r.key),
  );
};
