import type { Kernel } from '../../infra/kernel';
import { storedPayloadOf } from '../../domain/events/platform-events';
import { storedEventOf } from '../../infra/events/envelope';
import { inTransaction } from '../../infra/postgres/db';
import { executeBatch } from '../../infra/projections/batch';
import { handlesType, isAnalytics, relationsFor, statementsFor } from '../../infra/projections/projection';
import { progressBar } from './progress';

export interface ReplayOptions {
  topic: string;
  from: { offset: number } | { time: number };
  to?: { offset: number } | { time: number };
  into: string;
}

/**
 * Re-delivers a topic's events from an offset or a time. Into a projection: the events are applied
 * again (projections are idempotent, so this repairs without doubling). Into a consumer group: the
 * group's committed offsets are moved back, and the consumer re-reads from there when it runs.
 */
export const replay = async (kernel: Kernel, o: ReplayOptions): Promise<number> => {
  const { log } = kernel;
  const projection = kernel.projections.projections.find((p) => p.name === o.into);
  if (!projection) {
    if (o.to)
      throw new Error('--to applies to replays into a projection; a consumer group resumes to the end of the log');
    await log.seek(o.into, o.topic, 'offset' in o.from ? { offset: o.from.offset } : { timestamp: o.from.time });
    const positions = await log.positions(o.into, o.topic);
    const total = positions.reduce((n, p) => n + p.lag, 0);
    progressBar('replay').done(`consumer group ${o.into} rewound on ${o.topic}: ${total} records will be re-delivered`);
    return total;
  }
  // a ClickHouse view's rows may depend on carried state (a running hash) that only a replay of the whole log rebuilds
  if (isAnalytics(projection))
    throw new Error(
      `${projection.name} is a ClickHouse projection: rebuild it from the log with platform projections rebuild ${projection.name}`,
    );
  const partitions = await log.partitionsOf(o.topic);
  const from = o.from;
  const starts: Record<number, number> =
    'offset' in from
      ? Object.fromEntries(Array.from({ length: partitions }, (_, p) => [p, from.offset]))
      : await log.offsetsForTime(o.topic, from.time);
  const ends = await log.offsetsForTime(o.topic, Number.MAX_SAFE_INTEGER);
  const total = Object.entries(starts).reduce((n, [p, start]) => n + Math.max(0, (ends[Number(p)] ?? 0) - start), 0);
  const bar = progressBar('replay');
  const { rows } = await kernel.db.query<{ active_generation: number }>(
    'SELECT active_generation FROM es.projections WHERE name = $1',
    [projection.name],
  );
  const relations = relationsFor(projection, rows[0]?.active_generation ?? 1);
  let applied = 0;
  let seen = 0;
  for (let partition = 0; partition < partitions; partition += 1) {
    let offset = starts[partition] ?? 0;
    for (;;) {
      const records = await log.read(o.topic, partition, offset, 500);
      const due = records.filter((r) => !o.to || ('offset' in o.to ? r.offset < o.to.offset : r.timestamp < o.to.time));
      const events = due
        .flatMap((r) => storedEventOf(r, storedPayloadOf) ?? [])
        .filter((e) => handlesType(projection, e.type));
      await inTransaction(kernel.db, (tx) => executeBatch(tx, statementsFor(projection, events, relations)));
      applied += events.length;
      seen += records.length;
      bar.update(seen, Math.max(total, seen));
      if (records.length < 500 || due.length < records.length) break;
      offset = records[records.length - 1]!.offset + 1;
    }
  }
  bar.done(`replayed ${seen} records of ${o.topic} into ${projection.name} (${applied} applied)`);
  return applied;
};
