import { randomBytes, randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testToken } from '../../support/auth';
import type { TestDatabase } from '../../support/db';
import { createTestDatabase } from '../../support/db';
import { pollUntil } from '../../support/poll';
import type { RoleProcess } from '../../support/split';
import { startClickHouse, stopRole } from '../../support/split';
import type { ServiceProcess } from '../../support/service-process';
import { startServiceProcess } from '../../support/service-process';

/*
 * Acknowledged means durable (spec 002: audit writes are "asynchronous and never lost"; DESIGN.md
 * mechanism 10): the server is killed with SIGKILL while clients write audit records, and every
 * record it acknowledged — POST /audit, POST /audit/batch and the edge's API-call record of each
 * acknowledged request — is stored once after a restart. The audit store is chdb served over HTTP
 * (tests/support/clickhouse-server.ts), so the test counts rows while servers come and go. One
 * process is killed: the split roles run the same recorder, outbox and relay.
 */

const TENANT = `durable-${randomUUID()}`;
const headers = (traceId: string) => ({
  authorization: `Bearer ${testToken(TENANT, 'writer', [])}`,
  'content-type': 'application/json',
  traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01`,
});

describe('the server killed (SIGKILL) while clients write audit records', () => {
  let database: TestDatabase;
  let clickhouse: { url: string; process: RoleProcess };
  let server: ServiceProcess | null = null;
  let env: Record<string, string>;

  beforeAll(async () => {
    database = await createTestDatabase('durable');
    clickhouse = await startClickHouse(join(tmpdir(), `platform-durable-${process.pid}-${randomUUID()}`));
    env = { DATABASE_URL: database.url, CLICKHOUSE_URL: clickhouse.url };
  }, 180_000);
  afterAll(async () => {
    server?.child.kill('SIGKILL');
    if (clickhouse) await stopRole(clickhouse.process);
    await database?.drop();
  });

  /** how many times each id (or trace id, for the API-call records) is stored in the audit store */
  const stored = async (column: 'id' | 'trace_id', action: string): Promise<Map<string, number>> => {
    const db = new URL(database.url).pathname.slice(1);
    const query = `SELECT ${column} AS k, count() AS n FROM ${db}.audit_records
      WHERE tenant_id = '${TENANT}' AND action = '${action}' GROUP BY k FORMAT JSON`;
    const res = await fetch(clickhouse.url, { method: 'POST', body: query });
    if (!res.ok) return new Map(); // the table is made by the server's first start
    const { data } = (await res.json()) as { data: { k: string; n: string | number }[] };
    return new Map(data.map((r) => [r.k, Number(r.n)]));
  };

  it('stores every record it acknowledged once after a restart — POST /audit, /audit/batch and the API-call records', async () => {
    server = await startServiceProcess('audit', env, 120_000);
    const acknowledged = new Set<string>();
    const acknowledgedCalls = new Set<string>();
    let killed = false;
    let sent = 0;
    const client = async (n: number) => {
      for (let i = 0; !killed; i += 1) {
        const traceId = randomBytes(16).toString('hex');
        const record = (k: number) => ({
          action: 'test.durability.recorded',
          entityType: 'item',
          entityId: `c${n}-${i}-${k}`,
          after: { n, i, k },
        });
        const batch = i % 3 === 0;
        sent += 1;
        try {
          const res = await fetch(`${server!.url}/v1/audit${batch ? '/batch' : ''}`, {
            method: 'POST',
            headers: headers(traceId),
            body: JSON.stringify(batch ? { records: [0, 1, 2, 3, 4].map(record) } : record(0)),
          });
          if (res.status !== 202) continue;
          const body = (await res.json()) as { auditId?: string; results?: { data: { auditId: string } }[] };
          for (const id of batch ? body.results!.map((r) => r.data.auditId) : [body.auditId!]) acknowledged.add(id);
          acknowledgedCalls.add(traceId);
        } catch {
          // in flight when the process died: never acknowledged, so nothing is owed
        }
      }
    };
    const storm = Promise.all(Array.from({ length: 8 }, (_, n) => client(n)));
    await pollUntil(
      async () => acknowledged.size,
      (size) => size >= 300,
      { timeoutMs: 60_000, what: '300 acknowledged records' },
    );
    server.child.kill('SIGKILL');
    killed = true;
    await storm;
    server = await startServiceProcess('audit', env, 120_000);

    /** the acknowledged keys not stored (yet), and how often each stored one is */
    const storedOf = async (column: 'id' | 'trace_id', action: string, owed: Set<string>) => {
      const found = await stored(column, action);
      return { missing: [...owed].filter((k) => !found.has(k)), counts: [...owed].map((k) => found.get(k)) };
    };
    const records = await pollUntil(
      () => storedOf('id', 'test.durability.recorded', acknowledged),
      ({ missing }) => missing.length === 0,
      { timeoutMs: 120_000, everyMs: 500, what: `the ${acknowledged.size} acknowledged records stored` },
    );
    const calls = await pollUntil(
      () => storedOf('trace_id', 'audit.api.called', acknowledgedCalls),
      ({ missing }) => missing.length === 0,
      { timeoutMs: 120_000, everyMs: 500, what: `the API-call records of ${acknowledgedCalls.size} answers stored` },
    );
    // none twice, even the ones published and then replayed from the outbox after the restart
    expect(records.counts.filter((n) => n !== 1)).toEqual([]);
    expect(calls.counts.filter((n) => n !== 1)).toEqual([]);
    console.warn(
      `audit durability: ${sent} requests sent, ${acknowledged.size} records and ${acknowledgedCalls.size} calls acknowledged before the kill, all stored once`,
    );
  }, 400_000);
});
