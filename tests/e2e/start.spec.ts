import { randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { userInfo, tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { embeddedEnv, freePort, runCli, runPlatform, waitFor } from '../support/process';

const dataDir = mkdtempSync(join(tmpdir(), 'platform-start-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

const embedded = embeddedEnv(dataDir, 'info');

/** a platform owner made with the CLI beside the running platform at url, and its access token */
const ownerToken = async (url: string, email: string): Promise<string> => {
  const password = 'vX9#qL2!mR7p-owner-e2e';
  const created = await runCli(['owner', 'create', '--email', email, '--password', password], {
    ...embedded,
    GRPC_PORT: '0',
  });
  expect(created.code, created.stderr).toBe(0);
  const login = await fetch(`${url}/v1/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, password }),
  });
  expect(login.status).toBe(200);
  return ((await login.json()) as { accessToken: string }).accessToken;
};

describe('`platform start` on an empty data folder', () => {
  it('becomes ready on embedded engines (also as root), answers /live and /ready, and stops cleanly on SIGTERM', async () => {
    const port = await freePort();
    const p = runPlatform(['start'], embedded, port);
    try {
      const ready = await waitFor(`${p.url}/ready`, 200, 120_000).catch((e: Error) => {
        throw new Error(`${e.message}\n${p.output().slice(-3000)}`);
      });
      expect(await ready.json()).toEqual({ status: 'ready' });
      expect(await (await fetch(`${p.url}/live`)).json()).toEqual({ status: 'ok' });
      // billing's gRPC service is served by `npm start` too (loopback, plaintext)
      expect(p.output()).toMatch(/"host":"127\.0\.0\.1","port":\d+,"tls":false,"msg":"billing gRPC listening"/);
      const notFound = await fetch(`${p.url}/v1/nothing`);
      expect(notFound.status).toBe(404);
      expect(notFound.headers.get('content-type')).toMatch(/application\/problem\+json/);
      if (userInfo().uid === 0) {
        // PostgreSQL refuses root: the embedded server runs as the unprivileged postgres user
        expect(statSync(join(dataDir, 'postgres')).uid).not.toBe(0);
      }
    } finally {
      p.child.kill('SIGTERM');
    }
    expect(await p.exited).toBe(0);
    expect(p.output()).toContain('draining requests');
  }, 180_000);

  it('starts again on the same folder with its data and migrations in place', async () => {
    const port = await freePort();
    const p = runPlatform(['start'], embedded, port);
    try {
      await waitFor(`${p.url}/ready`, 200, 120_000).catch((e: Error) => {
        throw new Error(`${e.message}\n${p.output().slice(-3000)}`);
      });
      expect(p.output()).not.toContain('migration applied');
      expect(readdirSync(dataDir)).toEqual(expect.arrayContaining(['postgres', 'platform.secret']));
    } finally {
      p.child.kill('SIGTERM');
    }
    expect(await p.exited).toBe(0);
  }, 180_000);

  it('on SIGTERM answers the request still arriving, with its database, then exits 0', async () => {
    const port = await freePort();
    const p = runPlatform(['start'], embedded, port);
    let answered: Promise<{ status: number; body: string }>;
    try {
      await waitFor(`${p.url}/ready`, 200, 120_000).catch((e: Error) => {
        throw new Error(`${e.message}\n${p.output().slice(-3000)}`);
      });
      // given a login whose body is half sent when the signal comes
      const body = JSON.stringify({ email: 'nobody@example.test', password: 'not the password at all' });
      const req = request(`${p.url}/v1/auth/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      });
      answered = new Promise((resolve, reject) => {
        req.on('response', (res) => {
          let text = '';
          res.on('data', (d: Buffer) => (text += d.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
        });
        req.on('error', reject);
      });
      req.write(body.slice(0, 10));
      await sleep(300);
      p.child.kill('SIGTERM');
      // when the rest arrives after the server began to drain (and after any library's own exit would have run)
      await sleep(2_000);
      req.end(body.slice(10));
    } catch (error) {
      p.child.kill('SIGTERM');
      throw error;
    }
    // then the login is answered from the database (a refusal, not a broken connection or a 5xx) and the process exits 0
    const reply = await answered;
    expect(reply.status, reply.body).toBe(401);
    expect(await p.exited, p.output().slice(-3000)).toBe(0);
  }, 180_000);
});

describe('`platform start` restarting under a client with a valid token', () => {
  it('answers 503 with Retry-After until it is ready, never 401: a token is not refused for the server not being up', async () => {
    // given a platform owner's token from a first run
    const port = await freePort();
    const first = runPlatform(['start'], embedded, port);
    let token: string;
    try {
      await waitFor(`${first.url}/ready`, 200, 120_000);
      token = await ownerToken(first.url, 'restart@example.com');
    } finally {
      first.child.kill('SIGTERM');
    }
    expect(await first.exited).toBe(0);

    // when the platform starts again and the client asks as soon as the port opens
    const second = runPlatform(['start'], embedded, port);
    const answers: { status: number; retryAfter: string | null; suffix?: string }[] = [];
    try {
      const deadline = Date.now() + 120_000;
      for (;;) {
        expect(Date.now(), `not ready in time:\n${second.output().slice(-3000)}`).toBeLessThan(deadline);
        const res = await fetch(`${second.url}/v1/auth/me`, { headers: { authorization: `Bearer ${token}` } }).catch(
          () => null, // the port is not open yet
        );
        if (!res) {
          await sleep(10);
          continue;
        }
        const body = (await res.json()) as { type?: string };
        answers.push({
          status: res.status,
          retryAfter: res.headers.get('retry-after'),
          suffix: body.type?.split('/').pop(),
        });
        if (res.status === 200) break;
      }
    } finally {
      second.child.kill('SIGTERM');
    }
    expect(await second.exited).toBe(0);
    // then every answer before the first 200 was "not ready, retry", none a refusal of the token
    const before = answers.slice(0, -1);
    expect(
      before.filter((a) => a.status !== 503 || a.retryAfter === null || a.suffix !== 'service-unavailable'),
    ).toEqual([]);
    expect(answers.at(-1)?.status).toBe(200);
  }, 300_000);
});

describe('`platform start` told twice to stop while its embedded ClickHouse is busy', () => {
  it('drains once and exits 0: neither a long export job nor a second SIGTERM cuts the drain short (it died of SIGSEGV in chdb)', async () => {
    const port = await freePort();
    const p = runPlatform(['start'], embedded, port);
    let exit: { code: number | null; signal: NodeJS.Signals | null };
    try {
      await waitFor(`${p.url}/ready`, 200, 120_000);
      const headers = {
        authorization: `Bearer ${await ownerToken(p.url, 'twice@example.com')}`,
        'content-type': 'application/json',
      };
      // given clients keeping the audit store busy: records written, listed and exported
      let stopping = false;
      const audit = [
        () => fetch(`${p.url}/v1/audit?page_size=100`, { headers }),
        () =>
          fetch(`${p.url}/v1/audit/export?format=csv&since=2020-01-01T00:00:00Z&until=2030-01-01T00:00:00Z`, {
            headers,
          }),
        () =>
          fetch(`${p.url}/v1/audit`, {
            method: 'POST',
            headers,
            body: JSON.stringify({ action: 'test.record.written', entityType: 'record', entityId: randomUUID() }),
          }),
      ];
      const clients = Array.from({ length: 8 }, async (_, i) => {
        while (!stopping)
          await audit[i % audit.length]!().then(
            (r) => r.arrayBuffer(),
            () => undefined,
          );
      });
      await sleep(3_000);
      // when SIGTERM comes twice, the second while it drains
      const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
        p.child.on('exit', (code, signal) => resolve({ code, signal })),
      );
      p.child.kill('SIGTERM');
      await sleep(100);
      p.child.kill('SIGTERM');
      exit = await exited;
      stopping = true;
      await Promise.all(clients);
    } finally {
      if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
    }
    // then it drained once and exited 0: the export job running on the audit store went back to its queue
    expect(exit, p.output().slice(-3000)).toEqual({ code: 0, signal: null });
  }, 300_000);
});

describe('`platform serve` with a bad configuration', () => {
  it('refuses to start and names the variable and what it expects', async () => {
    const port = await freePort();
    const p = runPlatform(['serve', 'write-api'], { DATABASE_URL: 'not a url', KAFKA_BROKERS: 'nope' }, port);
    expect(await p.exited).toBe(2);
    expect(p.output()).toMatch(/DATABASE_URL: .*(url|URL)/);
    expect(p.output()).toMatch(/KAFKA_BROKERS: expected a comma-separated list of host:port/);
  });

  it('refuses to run a split role without DATABASE_URL', async () => {
    const port = await freePort();
    const p = runPlatform(['serve', 'read-api'], { DATABASE_URL: '' }, port);
    expect(await p.exited).toBe(2);
    expect(p.output()).toContain('DATABASE_URL: required by `platform serve read-api`');
  });
});
