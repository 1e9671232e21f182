import type { AnalyticsStore } from './port';
import { openClickHouseHttp } from './http';
import { openEmbeddedClickHouse } from './embedded';

export type { AnalyticsStore } from './port';

/** A server when CLICKHOUSE_URL is configured, the in-process engine otherwise. */
export const openAnalyticsStore = async (config: {
  clickhouseUrl?: string;
  dataDir: string;
  database?: string;
}): Promise<AnalyticsStore> =>
  config.clickhouseUrl
    ? openClickHouseHttp({ url: config.clickhouseUrl, database: config.database })
    : openEmbeddedClickHouse({ dataDir: config.dataDir, database: config.database });
