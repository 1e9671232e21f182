import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { createClient, type ClickHouseClientConfigOptions } from '@clickhouse/client';
import type { AnalyticsStore } from './port';
import { storeOverClient } from './client-store';

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
  try {
    const connection = createChdbConnection({ path }) as unknown as ClickHouseClientConfigOptions['connection'];
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
    // close() returns before the engine has let go of the directory; wait, so a store opened next
    // (on another directory, e.g. in tests) does not find the slot busy.
    close: async () => {
      await store.close();
      await drainPending();
    },
  };
};
