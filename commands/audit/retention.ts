import type { Kernel } from '../../infra/kernel';
import { tableOf } from '../../infra/clickhouse/port';
import { DOMAIN, DOMAIN_VIEW, RECORDS } from '../../domain/audit/rows';
import { generationTable } from '../../infra/projections/analytics';

/** spec 002: the fallback table keeps records 7 days */
export const FALLBACK_RETENTION_DAYS = 7;

/**
 * Hot retention: the TTL of both audit tables follows AUDIT_HOT_DAYS (metadata only: rows past it
 * leave at the next merges, nothing is rewritten now). Run at start and hourly, so a rebuilt
 * generation of the domain view gets it too.
 */
export const syncHotRetention = async (kernel: Kernel): Promise<void> => {
  const ch = await kernel.analytics();
  const days = kernel.config.AUDIT_HOT_DAYS;
  await ch.command(
    `ALTER TABLE ${tableOf(ch, RECORDS)} MODIFY TTL toDateTime(ingested_at) + INTERVAL ${days} DAY SETTINGS materialize_ttl_after_modify = 0`,
  );
  const {
    rows: [p],
  } = await kernel.db.query<{ active_generation: number }>(
    'SELECT active_generation FROM es.projections WHERE name = $1',
    [DOMAIN_VIEW],
  );
  if (!p) return;
  const domain = generationTable(ch, DOMAIN, p.active_generation);
  await ch.command(
    `ALTER TABLE ${domain} MODIFY TTL toDateTime(timestamp) + INTERVAL ${days} DAY SETTINGS materialize_ttl_after_modify = 0`,
  );
};

/** drops fallback records older than 7 days (the log was down that long: spec 002 keeps them no longer); returns how many */
export const purgeFallback = async (kernel: Pick<Kernel, 'db' | 'logger'>): Promise<number> => {
  const { rowCount } = await kernel.db.query(
    'DELETE FROM audit.outbox WHERE created_at < now() - make_interval(days => $1)',
    [FALLBACK_RETENTION_DAYS],
  );
  if (rowCount)
    kernel.logger.warn(
      { dropped: rowCount },
      'audit fallback records older than 7 days dropped: the log was unreachable all that time',
    );
  return rowCount ?? 0;
};
