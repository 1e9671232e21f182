import type { Db } from '../../infra/postgres/db';
import { inTransaction } from '../../infra/postgres/db';

/**
 * The transaction history is partitioned monthly by created_at (spec 002: stored 7 years,
 * partitioned monthly). A generation table is created with a default partition and the months
 * around its creation; the hold-expiry worker keeps creating the coming months (ensureMonths).
 */
export const monthKey = (d: Date): string => `${d.getUTCFullYear()}${String(d.getUTCMonth() + 1).padStart(2, '0')}`;
const monthStart = (d: Date, offset: number): Date =>
  new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + offset, 1));

export const partitionName = (parent: string, month: Date): string => `${parent}_p${monthKey(month)}`;

export const monthPartitionDdl = (parent: string, month: Date): string =>
  `CREATE TABLE IF NOT EXISTS ${partitionName(parent, month)} PARTITION OF ${parent} FOR VALUES FROM ('${monthStart(month, 0).toISOString()}') TO ('${monthStart(month, 1).toISOString()}')`;

/** the partitions a new generation starts with: a year back (replays of recent history) and three months ahead */
export const initialPartitions = (parent: string, now: Date): string[] => [
  `CREATE TABLE ${parent}_default PARTITION OF ${parent} DEFAULT`,
  ...Array.from({ length: 16 }, (_, i) => monthPartitionDdl(parent, monthStart(now, i - 12))),
];

const PARENTS = `SELECT n.nspname || '.' || c.relname AS parent FROM pg_partitioned_table p
  JOIN pg_class c ON c.oid = p.partrelid JOIN pg_namespace n ON n.oid = c.relnamespace
  WHERE n.nspname = 'rm' AND c.relname ~ '^money_transactions_g[0-9]+$'`;

/**
 * Creates the partitions of this month and the next `ahead` months for every generation of the
 * history table; rows of such a month that landed in the default partition meanwhile move into the
 * new one (detach default, create, move, attach) in one transaction. Returns partitions created.
 */
export const ensureMonthlyPartitions = async (db: Db, now: Date, ahead = 3): Promise<number> => {
  const { rows } = await db.query<{ parent: string }>(PARENTS);
  let created = 0;
  for (const { parent } of rows) {
    for (let i = 0; i <= ahead; i += 1) {
      const month = monthStart(now, i);
      const name = partitionName(parent, month);
      const exists = await db.query<{ r: string | null }>('SELECT to_regclass($1)::text AS r', [name]);
      if (exists.rows[0]?.r) continue;
      await inTransaction(db, async (tx) => {
        await tx.query(`LOCK TABLE ${parent} IN ACCESS EXCLUSIVE MODE`);
        if ((await tx.query<{ r: string | null }>('SELECT to_regclass($1)::text AS r', [name])).rows[0]?.r) return;
        const from = monthStart(month, 0).toISOString();
        const to = monthStart(month, 1).toISOString();
        const defaultPart = `${parent}_default`;
        const hasDefault = (await tx.query<{ r: string | null }>('SELECT to_regclass($1)::text AS r', [defaultPart]))
          .rows[0]?.r;
        if (hasDefault) await tx.query(`ALTER TABLE ${parent} DETACH PARTITION ${defaultPart}`);
        await tx.query(monthPartitionDdl(parent, month));
        if (hasDefault) {
          await tx.query(
            `WITH moved AS (DELETE FROM ${defaultPart} WHERE created_at >= $1 AND created_at < $2 RETURNING *) INSERT INTO ${parent} SELECT * FROM moved`,
            [from, to],
          );
          await tx.query(`ALTER TABLE ${parent} ATTACH PARTITION ${defaultPart} DEFAULT`);
        }
        created += 1;
      });
    }
  }
  return created;
};
