import { Readable } from 'node:stream';
import type { ClickHouseClient, ClickHouseSettings } from '@clickhouse/client';
import type { AnalyticsStore } from './port';
import { IDENTIFIER } from './port';

/**
 * Settings pinned on every call so the server and chdb answer alike: their defaults differ
 * (chdb prints 64-bit integers as JSON numbers, the server quotes them), and event envelopes
 * carry ISO-8601 timestamps that the strict default parser would refuse.
 */
export const sharedSettings: ClickHouseSettings = {
  output_format_json_quote_64bit_integers: 1,
  date_time_input_format: 'best_effort',
};

// Table names are ours, never a caller's, but they are spliced into SQL: keep them plain identifiers.
const TABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$/;

/**
 * The store over a client, with the platform's database created when missing (every statement of
 * ours names it, so the two adapters need no per-connection default database).
 */
export const storeOverClient = async (
  client: ClickHouseClient,
  kind: AnalyticsStore['kind'],
  database: string,
): Promise<AnalyticsStore> => {
  if (!IDENTIFIER.test(database)) throw new Error(`invalid ClickHouse database name: ${database}`);
  await client.command({ query: `CREATE DATABASE IF NOT EXISTS ${database}`, clickhouse_settings: sharedSettings });
  return storeOf(client, kind, database);
};

/** `INSERT INTO <table> (<columns>) FORMAT JSONCompactEachRow`, every name checked */
export const linesInsert = (table: string, columns: readonly string[]): string => {
  if (!TABLE_NAME.test(table)) throw new Error(`invalid table name: ${table}`);
  if (columns.length === 0 || !columns.every((c) => IDENTIFIER.test(c))) throw new Error('invalid column list');
  return `INSERT INTO ${table} (${columns.join(', ')}) FORMAT JSONCompactEachRow`;
};

const storeOf = (client: ClickHouseClient, kind: AnalyticsStore['kind'], database: string): AnalyticsStore => ({
  kind,
  database,
  async command(sql) {
    await client.command({ query: sql, clickhouse_settings: sharedSettings });
  },
  async insert(table, rows) {
    if (!TABLE_NAME.test(table)) throw new Error(`invalid table name: ${table}`);
    if (rows.length === 0) return;
    await client.insert({ table, values: rows, format: 'JSONEachRow', clickhouse_settings: sharedSettings });
  },
  async insertLines(table, columns, lines) {
    const sql = linesInsert(table, columns);
    if (lines.length === 0) return;
    // the client encodes JSON formats from objects itself; a ready body goes as the statement's data
    const result = await client.exec({
      query: sql,
      values: Readable.from([lines]),
      clickhouse_settings: sharedSettings,
    });
    result.stream.destroy();
  },
  async query<T>(sql: string, params?: Record<string, unknown>) {
    const result = await client.query({
      query: sql,
      query_params: params ?? {},
      format: 'JSONEachRow',
      clickhouse_settings: sharedSettings,
    });
    return result.json<T>();
  },
  async ping() {
    // The client reports a failed ping as a value, not an exception; health checks want a throw.
    const result = await client.ping();
    if (!result.success) throw result.error;
  },
  close: () => client.close(),
});
