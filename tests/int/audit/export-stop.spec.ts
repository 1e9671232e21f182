import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createExportJob, runNextExportJob } from '../../../commands/audit/exports';
import { auditServices } from '../../support/audit';
import type { TestPlatform } from '../../support/platform';
import { startTestPlatform } from '../../support/platform';
import { startClickHouse, stopRole } from '../../support/split';

/**
 * An export job running when its worker stops (a deploy, SIGTERM) goes back to the queue at once,
 * instead of holding the process's drain past SHUTDOWN_GRACE_MS — a forced exit with the embedded
 * ClickHouse busy died of SIGSEGV — or waiting an hour for its lease. write-api runs no workers, so
 * nothing but the test takes the job.
 */
let p: TestPlatform;
let clickhouse: Awaited<ReturnType<typeof startClickHouse>>;

beforeAll(async () => {
  // a role apart needs a ClickHouse every role shares: chdb served over HTTP in a process of its own
  clickhouse = await startClickHouse(mkdtempSync(join(tmpdir(), 'export-stop-ch-')));
  p = await startTestPlatform({ role: 'write-api', services: auditServices, env: { CLICKHOUSE_URL: clickhouse.url } });
});
afterAll(async () => {
  await p?.close();
  if (clickhouse) {
    await stopRole(clickhouse.process);
    rmSync(clickhouse.folder, { recursive: true, force: true });
  }
});

const statusOf = async (id: string) =>
  (
    await p.kernel.db.query<{ status: string; started: boolean }>(
      'SELECT status, started_at IS NOT NULL AS started FROM audit.export_jobs WHERE id = $1',
      [id],
    )
  ).rows[0];

describe('an export job whose worker stops', () => {
  it('is queued again, and the next worker completes it', async () => {
    const tenantId = `tenant-${randomUUID()}`;
    const range = { tenantId, since: new Date('2020-01-01T00:00:00Z'), until: new Date('2026-01-01T00:00:00Z') };
    const job = await createExportJob(p.kernel, range, 'csv', 'u-1');
    // given a worker that is stopping while the job runs (72 months to read)
    const stopping = new AbortController();
    stopping.abort(new Error('the worker is stopping'));
    expect(await runNextExportJob(p.kernel, stopping.signal)).toBe(true);
    expect(await statusOf(job.jobId)).toEqual({ status: 'queued', started: false });
    // when a worker that is not stopping takes it
    expect(await runNextExportJob(p.kernel)).toBe(true);
    expect(await statusOf(job.jobId)).toEqual({ status: 'completed', started: true });
  });
});
