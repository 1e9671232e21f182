import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ingestAuditRecords } from '../../commands/audit/ingest';
import { auditRecord } from '../../infra/audit';
import { openEmbeddedClickHouse } from '../../infra/clickhouse/embedded';
import { migrateAnalytics } from '../../infra/clickhouse/migrate';
import { uuidV7Ids } from '../../infra/runtime/clock';
import type { TestDatabase } from '../support/db';
import { createTestDatabase } from '../support/db';
import { runCli } from '../support/process';

/**
 * `platform audit verify` as an operator runs it, on a data folder whose audit store holds two
 * tenants' chains, one of them altered in storage.
 */
let database: TestDatabase;
let dataDir: string;
const intact = `intact-${randomUUID()}`;
const tampered = `tampered-${randomUUID()}`;
let altered: { id: string; seq: string };

beforeAll(async () => {
  database = await createTestDatabase('audv');
  dataDir = await mkdtemp(join(tmpdir(), 'platform-audit-verify-'));
  const ch = await openEmbeddedClickHouse({ dataDir, database: new URL(database.url).pathname.slice(1) });
  try {
    await migrateAnalytics(ch, database.db);
    const records = [intact, tampered].flatMap((tenantId) =>
      Array.from(
        { length: 25 },
        (_, i) =>
          auditRecord(
            {
              action: 'shop.order.placed',
              entityType: 'order',
              entityId: `o-${i}`,
              tenantId,
              actorId: 'u',
              after: { i },
              timestamp: new Date().toISOString(),
            },
            uuidV7Ids.next(),
          ).value,
      ),
    );
    await ingestAuditRecords(database.db, ch, records, new Date());
    [altered] = (await ch.query<{ id: string; seq: string }>(
      `SELECT id, seq FROM ${ch.database}.audit_records WHERE tenant_id = {t:String} AND seq = 12`,
      { t: tampered },
    )) as [{ id: string; seq: string }];
    await ch.command(
      `ALTER TABLE ${ch.database}.audit_records UPDATE entity_id = 'o-forged' WHERE id = '${altered.id}' SETTINGS mutations_sync = 2`,
    );
  } finally {
    await ch.close(); // the CLI process opens the folder next
  }
});
afterAll(async () => {
  await database?.drop();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

const verify = (...args: string[]) =>
  runCli(['audit', 'verify', ...args], { DATA_DIR: dataDir, DATABASE_URL: database.url, LOG_LEVEL: 'warn' });

describe('platform audit verify', () => {
  it('reports the first break of the altered tenant and exits 1, with progress on stderr', async () => {
    const run = await verify();
    expect(run.code).toBe(1);
    expect(run.stdout.trim().split('\n')).toEqual([
      `BROKEN\ttenant ${tampered}\tchain log\tseq ${altered.seq}\trecord ${altered.id}\taltered`,
    ]);
    expect(run.stderr).toMatch(/\[audit verify\] \d[\d,]*\/\d[\d,]* \(\d+%\)/);
    expect(run.stderr).toMatch(/1 broken chain\(s\)/);
  });

  it('checks one tenant with --tenant, exiting 0 when its chain is intact', async () => {
    const run = await verify('--tenant', intact);
    expect(run.code).toBe(0);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(/25 records of 1 tenant\(s\) verified; every chain is intact/);
  });
});
