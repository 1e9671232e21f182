/**
 * PocketBase as the peer of bench/data-crud.ts: built once from the Go module proxy by
 * bench/peers/pocketbase.sh (the version go.mod of bench/peers/pocketbase/ pins) into .cache/,
 * started on a loopback port with a data directory of its own, a superuser, a `contacts`
 * collection with our generated model's fields (name: text, required; email: text) and an index
 * on name, list/create rules that want an authenticated user, and one such user, whose token the
 * bench's requests carry — as ours carry a tenant user's.
 */
import type { ChildProcess } from 'node:child_process';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = dirname(fileURLToPath(import.meta.url));
export const POCKETBASE_VERSION =
  /github\.com\/pocketbase\/pocketbase (v\S+)/.exec(readFileSync(join(HERE, 'pocketbase', 'go.mod'), 'utf8'))?.[1] ??
  'unknown';
/** where no PocketBase can be built or run here: what it publishes (other hardware, not this run) */
export const POCKETBASE_REFERENCE =
  "PocketBase's published benchmarks (other hardware, not this run): https://github.com/pocketbase/benchmarks";

/** the binary, built when it is not yet (a minute or more the first time, then none), or why there is none */
export const pocketbaseBinary = (): { path: string } | { reason: string } => {
  const r = spawnSync('bash', [join(HERE, 'pocketbase.sh')], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  if (r.status !== 0)
    return {
      reason: `bench/peers/pocketbase.sh exited ${r.status ?? r.signal}: ${(r.stderr ?? '').trim().split('\n').slice(-3).join(' | ')}`,
    };
  return { path: r.stdout.trim().split('\n').pop()! };
};

const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });

export interface PocketBasePeer {
  url: string;
  /** the user's bearer token (Authorization: <token>, as PocketBase takes it) */
  token: string;
  /** inserts rows straight into the collection's SQLite table until it has `rows` (a list is a read of the table) */
  seed(rows: number): number;
  stop(): Promise<void>;
}

const SUPERUSER = { identity: 'bench@example.test', password: 'bench-password-1' };
const USER = { email: 'user@example.test', password: 'bench-password-2' };

export const startPocketBase = async (binary: string): Promise<PocketBasePeer> => {
  const dir = mkdtempSync(join(tmpdir(), 'bench-pocketbase-'));
  const data = join(dir, 'pb_data');
  const upsert = spawnSync(binary, ['superuser', 'upsert', SUPERUSER.identity, SUPERUSER.password, `--dir=${data}`], {
    encoding: 'utf8',
  });
  if (upsert.status !== 0) throw new Error(`pocketbase superuser upsert: ${upsert.stderr || upsert.stdout}`);
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child: ChildProcess = spawn(binary, ['serve', `--http=127.0.0.1:${port}`, `--dir=${data}`], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null) child.kill('SIGTERM');
    await exited;
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (let i = 0; ; i += 1) {
      if (child.exitCode !== null) throw new Error(`pocketbase exited ${child.exitCode}: ${stderr}`);
      const ok = await fetch(`${url}/api/health`).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) break;
      if (i > 600) throw new Error('pocketbase did not answer /api/health in 60 s');
      await new Promise((r) => setTimeout(r, 100));
    }
    const call = async (path: string, body: unknown, token?: string) => {
      const res = await fetch(`${url}/api${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(token ? { authorization: token } : {}) },
        body: JSON.stringify(body),
      });
      const json = (await res.json()) as Record<string, unknown>;
      if (!res.ok) throw new Error(`pocketbase POST ${path}: ${res.status} ${JSON.stringify(json)}`);
      return json;
    };
    const admin = (await call('/collections/_superusers/auth-with-password', SUPERUSER)).token as string;
    const authenticated = '@request.auth.id != ""';
    await call(
      '/collections',
      {
        name: 'contacts',
        type: 'base',
        listRule: authenticated,
        viewRule: authenticated,
        createRule: authenticated,
        fields: [
          { name: 'name', type: 'text', required: true },
          { name: 'email', type: 'text' },
        ],
        indexes: ['CREATE INDEX idx_contacts_name ON contacts (name)'],
      },
      admin,
    );
    await call('/collections/users/records', { ...USER, passwordConfirm: USER.password }, admin);
    const token = (
      await call('/collections/users/auth-with-password', { identity: USER.email, password: USER.password })
    ).token as string;
    const seed = (rows: number): number => {
      // one statement of SQLite's own (sqlite3, beside PocketBase's open database: WAL, it is idle then)
      const sql = `.timeout 60000
WITH RECURSIVE g(n) AS (SELECT (SELECT count(*) FROM contacts) UNION ALL SELECT n + 1 FROM g WHERE n + 1 < ${rows})
INSERT INTO contacts (id, name, email) SELECT printf('z%014d', n), 'name ' || printf('%08d', n), 'x' || n || '@example.test' FROM g WHERE n < ${rows};
ANALYZE contacts;
SELECT count(*) FROM contacts;`;
      const r = spawnSync('sqlite3', [join(data, 'data.db')], { input: sql, encoding: 'utf8' });
      if (r.status !== 0) throw new Error(`sqlite3: ${r.stderr}`);
      return Number(r.stdout.trim().split('\n').pop());
    };
    return { url, token, seed, stop };
  } catch (error) {
    await stop();
    throw error;
  }
};
