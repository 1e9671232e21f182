import type { ChildProcess } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestDatabase } from '../tests/support/db';
import { clamdEnv, filesClient, rssOf, testBucket, type FilesClient } from '../tests/support/files';
import { startServerProcess } from './support';

/**
 * Shared pieces of the files benchmarks: the files server as a child process
 * (tests/support/service-server.ts, role all: HTTP, scan and image workers) on a fresh database, a
 * bucket of its own on the test S3Proxy and the test clamd — the engines of scripts/test-infra.sh.
 */
export interface FilesServer {
  url: string;
  child: ChildProcess;
  database: TestDatabase;
  client(tenantId: string): FilesClient;
  /** the server process's resident memory, bytes */
  rss(): number;
  /** files of the tenant in this status, from the read model */
  count(tenantId: string, status: string): Promise<number>;
  stop(): Promise<void>;
}

export const startFilesServer = async (env: Record<string, string> = {}): Promise<FilesServer> => {
  const bucket = testBucket();
  const server = await startServerProcess('files', {
    DATA_DIR: join(tmpdir(), `bench-files-${process.pid}`),
    ...bucket.env,
    ...clamdEnv(),
    FILES_WORKER_POLL_MS: '50',
    ...env,
  });
  const { url, child, database } = server;
  return {
    url,
    child,
    database,
    client: (tenantId) => filesClient(url, tenantId, 'bench-uploader'),
    rss: () => rssOf(child.pid!),
    count: async (tenantId, status) =>
      (
        await database.db.query<{ n: number }>(
          'SELECT count(*)::int AS n FROM rm.files_files WHERE tenant_id = $1 AND status = $2',
          [tenantId, status],
        )
      ).rows[0]!.n,
    stop: async () => {
      await server.stop();
      await bucket.drop();
    },
  };
};

export const waitUntil = async (check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> => {
  const deadline = performance.now() + timeoutMs;
  while (!(await check())) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
};

export const MB = 1_048_576;
