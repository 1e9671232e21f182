import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AnalyticsStore } from '../../../infra/clickhouse/port';
import { openEmbeddedClickHouse } from '../../../infra/clickhouse/embedded';
import { openClickHouseHttp } from '../../../infra/clickhouse/http';
import '../../support/env';
import { startClickHouse, stopRole } from '../../support/split';

interface AuditRow {
  tenant_id: string;
  event_id: string;
  type: string;
  amount: string; // Int64 comes back quoted
  occurred_at: string;
}

const row = (tenant: string, n: number, type = 'money.wallet.credited') => ({
  tenant_id: tenant,
  event_id: `00000000-0000-7000-8000-${String(n).padStart(12, '0')}`,
  type,
  amount: String(9_007_199_254_740_993n + BigInt(n)), // beyond 2^53: must survive the round trip
  occurred_at: `2024-05-0${n}T10:00:00.123Z`,
});

const contract = (name: string, open: () => Promise<AnalyticsStore>) => {
  describe(`${name}: a MergeTree audit table holding three events of two tenants`, () => {
    let store: AnalyticsStore;
    const table = `audit_events_${process.pid}_${Date.now()}`;

    beforeAll(async () => {
      store = await open();
      await store.command(`
        CREATE TABLE ${table} (
          tenant_id String, event_id UUID, type LowCardinality(String), amount Int64, occurred_at DateTime64(3, 'UTC')
        ) ENGINE = MergeTree ORDER BY (tenant_id, occurred_at, event_id)`);
      await store.insert(table, [row('t-1', 1), row('t-1', 2, 'money.wallet.debited'), row('t-2', 3)]);
    });
    afterAll(async () => {
      await store?.command(`DROP TABLE IF EXISTS ${table}`);
      await store?.close();
    });

    it('answers a ping', async () => {
      await expect(store.ping()).resolves.toBeUndefined();
    });

    it('returns only the rows matching bound parameters, ordered as asked', async () => {
      const rows = await store.query<AuditRow>(
        `SELECT tenant_id, event_id, type, amount, occurred_at FROM ${table}
         WHERE tenant_id = {tenant:String} AND occurred_at >= {from:DateTime64(3)} ORDER BY occurred_at`,
        { tenant: 't-1', from: '2024-05-01 00:00:00.000' },
      );
      expect(rows.map((r) => r.type)).toEqual(['money.wallet.credited', 'money.wallet.debited']);
      expect(rows[0]).toMatchObject({
        event_id: row('t-1', 1).event_id,
        amount: '9007199254740994',
        occurred_at: '2024-05-01 10:00:00.123',
      });
    });

    it('treats a parameter as a value, never as SQL', async () => {
      const rows = await store.query<AuditRow>(`SELECT * FROM ${table} WHERE tenant_id = {tenant:String}`, {
        tenant: "t-1' OR 1=1 --",
      });
      expect(rows).toEqual([]);
    });

    it('returns 64-bit aggregates as exact strings', async () => {
      const [total] = await store.query<{ n: string; sum: string }>(
        `SELECT count() AS n, sum(amount) AS sum FROM ${table} WHERE tenant_id = {tenant:String}`,
        { tenant: 't-1' },
      );
      expect(total).toEqual({ n: '2', sum: '18014398509481989' });
    });

    it('reports a query error as a rejection', async () => {
      await expect(store.query(`SELECT * FROM ${table}_missing`)).rejects.toThrow(/missing/);
    });

    it('takes rows a writer encoded itself, one JSON array per line in its own column order', async () => {
      // given two lines whose texts hold quotes, a newline, a backslash and a 64-bit amount
      const lines = [
        ['9007199254740999', '2024-06-01T10:00:00.001Z', 'money.wallet.credited', 't-3', row('t-3', 8).event_id],
        [-5, '2024-06-02T10:00:00.002Z', 'say "hi"\n\\ é', 't-3', row('t-3', 9).event_id],
      ];
      // when they are inserted as they are
      await store.insertLines(
        table,
        ['amount', 'occurred_at', 'type', 'tenant_id', 'event_id'],
        lines.map((l) => JSON.stringify(l)).join('\n'),
      );
      // then each column holds its member
      const rows = await store.query<AuditRow>(
        `SELECT type, amount, occurred_at FROM ${table} WHERE tenant_id = 't-3' ORDER BY occurred_at`,
      );
      expect(rows).toEqual([
        { type: 'money.wallet.credited', amount: '9007199254740999', occurred_at: '2024-06-01 10:00:00.001' },
        { type: 'say "hi"\n\\ é', amount: '-5', occurred_at: '2024-06-02 10:00:00.002' },
      ]);
      await expect(store.insertLines(table, ['amount; DROP TABLE x'], '[1]')).rejects.toThrow(/invalid column/);
    });

    it('refuses a table name that is not a plain identifier', async () => {
      await expect(store.insert(`${table}; DROP TABLE x`, [row('t-1', 4)])).rejects.toThrow(/invalid table name/);
    });
  });
};

const dataDirs: string[] = [];
afterAll(async () => {
  for (const dir of dataDirs) await rm(dir, { recursive: true, force: true });
});

contract('embedded chdb', async () => {
  const dataDir = await mkdtemp(join(tmpdir(), 'platform-ch-'));
  dataDirs.push(dataDir);
  return openEmbeddedClickHouse({ dataDir });
});

describe('embedded chdb: a table written before the store was closed', () => {
  it('is still there after reopening on the same data folder', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'platform-ch-'));
    dataDirs.push(dataDir);
    const first = await openEmbeddedClickHouse({ dataDir });
    await first.command('CREATE TABLE kept (id UInt32) ENGINE = MergeTree ORDER BY id');
    await first.insert('kept', [{ id: 7 }]);
    await first.close();

    const second = await openEmbeddedClickHouse({ dataDir });
    try {
      expect(await second.query<{ id: number }>('SELECT id FROM kept')).toEqual([{ id: 7 }]);
    } finally {
      await second.close();
    }
  });
});

// The HTTP adapter runs the same contract against a server: TEST_CLICKHOUSE_URL when one is given,
// else the chdb engine served over ClickHouse's HTTP interface, the endpoint the split suite's roles share.
contract('ClickHouse server over HTTP', async () => {
  const given = process.env.TEST_CLICKHOUSE_URL;
  if (given) return openClickHouseHttp({ url: given });
  const folder = await mkdtemp(join(tmpdir(), 'platform-ch-http-'));
  dataDirs.push(folder);
  const server = await startClickHouse(folder);
  const store = await openClickHouseHttp({ url: server.url });
  return {
    ...store,
    close: async () => {
      await store.close();
      await stopRole(server.process);
    },
  };
});
