import { createClient } from '@clickhouse/client';
import type { AnalyticsStore } from './port';
import { storeOverClient } from './client-store';

export interface ClickHouseHttpOptions {
  /** CLICKHOUSE_URL, e.g. http://user:password@host:8123/database */
  url: string;
  requestTimeoutMs?: number;
}

/** Production: a ClickHouse server (≥ 24.8) over HTTP. */
export const openClickHouseHttp = (options: ClickHouseHttpOptions): AnalyticsStore =>
  storeOverClient(createClient({ url: options.url, request_timeout: options.requestTimeoutMs ?? 30_000 }), 'http');
