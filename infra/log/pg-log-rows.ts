/** How a log.records row is read back into a LogRecord, shared by reads and subscriptions. */
import type { LogRecord } from './port';

// extract(epoch) is numeric since PostgreSQL 14, so the milliseconds come back exact.
export const recordColumns = `topic, partition, "offset", key, value, headers, (extract(epoch from ts) * 1000)::bigint as ts_ms`;

/** epoch milliseconds → timestamptz, exact to the millisecond; $n is a bigint parameter. */
export const tsFromMillis = (param: string): string => `to_timestamp(${param}::bigint / 1000.0)`;

export interface RecordRow {
  topic: string;
  partition: number;
  offset: string; // bigint arrives as text from pg
  key: string;
  value: string;
  headers: Record<string, string>;
  ts_ms: string;
}

export const toLogRecord = (row: RecordRow): LogRecord => ({
  topic: row.topic,
  partition: row.partition,
  offset: Number(row.offset),
  key: row.key,
  value: row.value,
  headers: row.headers,
  timestamp: Number(row.ts_ms),
});
