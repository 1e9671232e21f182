import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { createClient, type ClickHouseClientConfigOptions } from '@clickhouse/client';
import type { AnalyticsStore } from './port';
import { linesInsert, sharedSettings, storeOverClient } from './client-store';

/** what the store uses of chdb's Connection beyond the client's contract: its raw-bytes insert */
interface ChdbRawInsert {
  chdb: {
    rawInsert(params: {
      table: string;
      columns: readonly string[];
      format: 'JSONCompactEachRow';
      values: Buffer;
      settings: Record<string, string | number>;
    }): Promise<unknown>;
  };
}

export interface EmbeddedClickHouseOptions {
  /** the platform's data folder; the engine keeps its files in <dataDir>/clickhouse */
  dataDir: string;
  /** the database the platform's tables live in (created when missing) */
  database?: string;
}

/**
 * `npm start` and tests: ClickHouse running inside this process (chdb), driven by the same
 * `@clickhouse/client` as production through chdb's Connection hook.
 *
 * libchdb binds one data directory per process: opening a second store on another directory
 * while one is open fails (the same directory is fine). chdb is imported lazily so a production
 * process never loads the native library.
 */
export const openEmbeddedClickHouse = async (options: EmbeddedClickHouseOptions): Promise<AnalyticsStore> => {
  const path = join(options.dataDir, 'clickhouse');
  await mkdir(path, { recursive: true });
  const [{ createChdbConnection }, { drainPending }] = await Promise.all([import('chdb/connection'), import('chdb')]);
  // chdb types its Connection against @clickhouse/client-common, which @clickhouse/client bundles as
  // its own copy; the shapes match at run time (chdb tracks the client's hook), not by declaration.
  let store: AnalyticsStore;
  let raw: ChdbRawInsert['chdb'];
  try {
    const chdbConnection = createChdbConnection({ path });
    raw = (chdbConnection as unknown as ChdbRawInsert).chdb;
    const connection = chdbConnection as unknown as ClickHouseClientConfigOptions['connection'];
    store = await storeOverClient(createClient({ connection }), 'embedded', options.database ?? 'platform');
  } catch (error) {
    // libchdb locks its folder: a second process (a CLI command beside `platform start`, a split role) cannot open it
    if (/Cannot lock file|Another server instance/i.test(String((error as Error)?.message))) {
      throw new Error(
        `the embedded ClickHouse (chdb) in ${path} is in use by another process, such as a running \`platform start\`: stop it, or set CLICKHOUSE_URL so that every process shares one ClickHouse server`,
        { cause: error },
      );
    }
    throw error;
  }
  return {
    ...store,
    // The client's path would join the rows to the statement's text for the SQL parser to wade
    // through; chdb's raw insert hands the bytes to the format parser as they are.
    async insertLines(table, columns, lines) {
      linesInsert(table, columns);
      if (lines.length === 0) return;
      await raw.rawInsert({
        table,
        columns,
        format: 'JSONCompactEachRow',
        values: Buffer.from(lines),
        settings: sharedSettings as Record<string, number | string>,
      });
    },
    // close() returns before the engine has let go of the directory; wait, so a store opened next
    // (on another directory, e.g. in tests) does not find the slot busy.
    close: async () => {
      await store.close();
      await drainPending();
    },
  };
};
