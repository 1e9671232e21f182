import { createClient } from '@clickhouse/client';
import type { AnalyticsStore } from './port';
import { storeOverClient } from './client-store';

export interface ClickHouseHttpOptions {
  /** CLICKHOUSE_URL, e.g. http://user:password@host:8123/database */
  url: string;
  requestTimeoutMs?: number;
  /** the database the platform's tables live in (created when missing); default: the URL's path, else platform */
  database?: string;
}

/** Production: a ClickHouse server (≥ 24.8) over HTTP. */
export const openClickHouseHttp = (options: ClickHouseHttpOptions): Promise<AnalyticsStore> =>
  storeOverClient(
    createClient({ url: options.url, request_timeout: options.requestTimeoutMs ?? 30_000 }),
    'http',
    options.database ?? databaseOfUrl(options.url) ?? 'platform',
  );

/** the database a ClickHouse URL names in its path (http://host:8123/platform), if any */
export const databaseOfUrl = (url: string): string | null => {
  const name = new URL(url).pathname.replace(/^\/+|\/+$/g, '');
  return name === '' ? null : name;
};
