import { randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { pollUntil } from './poll';
import type { PlatformProcess } from './process';
import { embeddedEnv, freePort, runPlatform, waitFor } from './process';

/**
 * `npm start` with two HTTP workers (HTTP_WORKERS=2) on its embedded engines: without Redis the
 * workers share the primary's cache over IPC (tests/e2e/cluster.spec.ts), with REDIS_URL they share
 * Redis (tests/e2e/cluster-redis.spec.ts); always the primary's PostgreSQL and chdb. Every request goes on a
 * connection of its own, which the primary hands to the workers in turn; PLATFORM_ENV=test makes
 * each answer name its worker (x-platform-worker, never outside tests), so the test sees which
 * worker answered.
 */
const ANONYMOUS_LIMIT = 25;
const METRICS_TOKEN = randomUUID().replaceAll('-', '');
const password = 'vX9#qL2!mR7p-cluster';

interface Answer {
  status: number;
  worker: string | undefined;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- answers are checked field by field
  body: any;
}

/** the suite, on a platform started with `extraEnv` beside the embedded defaults */
export const clusterSuite = (title: string, extraEnv: Record<string, string>): void => {
  const dataDir = mkdtempSync(join(tmpdir(), 'platform-cluster-'));
  const env = {
    ...embeddedEnv(dataDir, 'info'),
    HTTP_WORKERS: '2',
    PLATFORM_ENV: 'test',
    RATE_LIMIT_ANONYMOUS_PER_MIN: String(ANONYMOUS_LIMIT),
    METRICS_TOKEN,
    ...extraEnv,
  };
  let server: PlatformProcess;
  let port: number;

  /**
   * one request on a new connection (so the primary picks the worker), from localAddress when given:
   * its status, the worker that answered and the body's text
   */
  const send = (
    method: string,
    path: string,
    init: { token?: string; body?: unknown; headers?: Record<string, string>; localAddress?: string } = {},
  ): Promise<{ status: number; worker: string | undefined; text: string }> =>
    new Promise((resolve, reject) => {
      const payload = init.body === undefined ? undefined : JSON.stringify(init.body);
      const req = httpRequest(
        {
          host: '127.0.0.1',
          port,
          path,
          method,
          agent: false,
          localAddress: init.localAddress,
          headers: {
            ...(init.token ? { authorization: `Bearer ${init.token}` } : {}),
            ...(payload === undefined ? {} : { 'content-type': 'application/json' }),
            ...init.headers,
          },
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (text += chunk));
          res.on('end', () =>
            resolve({
              status: res.statusCode ?? 0,
              worker: res.headers['x-platform-worker'] as string | undefined,
              text,
            }),
          );
        },
      );
      req.on('error', reject);
      req.end(payload);
    });

  /** a call of the API (under /v1), its JSON body parsed */
  const call = async (method: string, path: string, init: Parameters<typeof send>[2] = {}): Promise<Answer> => {
    const { status, worker, text } = await send(method, `/v1${path}`, init);
    return { status, worker, body: text ? (JSON.parse(text) as unknown) : null };
  };

  /** one scrape of GET /metrics (either worker takes it): its text and the worker */
  const scrape = () => send('GET', '/metrics', { token: METRICS_TOKEN });
  /** the value of the one sample of `name` whose labels include every one given */
  const sampleOf = (text: string, name: string, labels: Record<string, string>): number | undefined => {
    const line = text
      .split('\n')
      .find(
        (l) =>
          (l.startsWith(`${name}{`) || l.startsWith(`${name} `)) &&
          Object.entries(labels).every(([k, v]) => l.includes(`${k}="${v}"`)),
      );
    return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
  };

  /** the node processes whose parent is pid (the primary's HTTP workers), from /proc */
  const nodeChildrenOf = (pid: number): number[] =>
    readdirSync('/proc')
      .filter((d) => /^\d+$/.test(d))
      .flatMap((d) => {
        try {
          const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
          const [, comm, rest] = /^\d+ \((.*)\) (.*)$/s.exec(stat) ?? [];
          return comm === 'node' && Number(rest?.split(' ')[1]) === pid ? [Number(d)] : [];
        } catch {
          return [];
        }
      });

  /** the invitation token of the newest invitation mail to `to`, from the embedded mailer's folder */
  const inviteToken = (to: string): Promise<string> =>
    pollUntil(
      () => {
        const folder = join(dataDir, 'mail');
        const mails = readdirSync(folder, { withFileTypes: true })
          .filter((f) => f.isFile() && !f.name.startsWith('.'))
          .map((f) =>
            readFileSync(join(folder, f.name), 'utf8')
              .replace(/=\r?\n/g, '')
              .replace(/=3D/g, '='),
          )
          .filter((m) => m.includes(to) && m.includes('accept-invite'));
        return Promise.resolve(/accept-invite\?token=([A-Za-z0-9_.%-]+)/.exec(mails.at(-1) ?? '')?.[1] ?? null);
      },
      (token) => token !== null,
      { timeoutMs: 30_000, everyMs: 200, what: `the invitation mail to ${to}` },
    ).then((token) => decodeURIComponent(token!));

  beforeAll(async () => {
    port = await freePort();
    server = runPlatform(['start'], env, port);
    // ready once every worker serves (the primary logs it)
    await waitFor(`${server.url}/ready`, 200, 400_000).catch((e: Error) => {
      throw new Error(`${e.message}\n${server.output().slice(-3000)}`);
    });
    await pollUntil(
      () => Promise.resolve(server.output()),
      (out) => /"workers":2,.*"msg":"platform ready"/.test(out),
      { timeoutMs: 400_000, everyMs: 500, what: 'both HTTP workers serving' },
    ).catch((e: Error) => {
      throw new Error(`${e.message}\n${server.output().slice(-3000)}`);
    });
  }, 600_000);

  afterAll(async () => {
    if (server && server.child.exitCode === null) {
      server.child.kill('SIGKILL');
      await server.exited;
    }
    rmSync(dataDir, { recursive: true, force: true });
  });

  describe(`\`platform start\` with HTTP_WORKERS=2 ${title}`, () => {
    let owner: string;
    let ownerId: string;

    beforeAll(async () => {
      const registered = await call('POST', '/auth/register', { body: { email: 'owner@example.com', password } });
      expect(registered.status, JSON.stringify(registered.body)).toBe(201);
      owner = registered.body.accessToken as string;
      ownerId = (registered.body.user as { id: string }).id;
    }, 60_000);

    it('answers from two worker processes, the children of the primary', async () => {
      const answers = await Promise.all(Array.from({ length: 8 }, () => call('GET', '/auth/me', { token: owner })));
      expect(answers.map((a) => a.status)).toEqual(Array(8).fill(200));
      expect(new Set(answers.map((a) => a.worker))).toEqual(new Set(['0', '1']));
      expect(nodeChildrenOf(server.child.pid!)).toHaveLength(2);
    });

    it("reports the whole process group in one scrape, whichever worker takes it, the primary's work included", async () => {
      const me = { method: 'GET', route: '/v1/auth/me', status_class: '2xx' };
      const count = 'platform_http_request_duration_seconds_count';
      const before = sampleOf((await scrape()).text, count, me) ?? 0;
      const answers = await Promise.all(Array.from({ length: 10 }, () => call('GET', '/auth/me', { token: owner })));
      expect(new Set(answers.map((a) => a.worker))).toEqual(new Set(['0', '1']));
      // every scrape, taken by either worker, counts the requests both workers answered
      const scrapes = [];
      for (let i = 0; i < 8 && new Set(scrapes.map((s) => s.worker)).size < 2; i++) scrapes.push(await scrape());
      expect(new Set(scrapes.map((s) => s.worker))).toEqual(new Set(['0', '1']));
      for (const s of scrapes) {
        expect(s.status).toBe(200);
        expect(sampleOf(s.text, count, me)).toBe(before + 10);
        // the relay and the projectors run in the primary: their figures are in the workers' answers
        expect(sampleOf(s.text, 'platform_relay_published_records_total', { source: 'outbox-relay' })).toBeGreaterThan(
          0,
        );
        expect(s.text).toMatch(/^platform_projection_lag_events\{projection="[^"]+"\} \d+$/m);
        // three processes' pools: the primary's and each worker's
        expect(sampleOf(s.text, 'platform_db_pool_max_connections', {}) ?? 0).toBeGreaterThan(0);
      }
    });

    it('admits exactly the anonymous limit of a burst, whatever worker counts it', async () => {
      // a client address of its own (loopback): its window is this burst's alone
      const burst = await Promise.all(
        Array.from({ length: 2 * ANONYMOUS_LIMIT }, () =>
          call('GET', '/auth/providers', { localAddress: '127.0.0.7' }),
        ),
      );
      expect(burst.filter((a) => a.status !== 429)).toHaveLength(ANONYMOUS_LIMIT);
      expect(burst.filter((a) => a.status === 429)).toHaveLength(ANONYMOUS_LIMIT);
      expect(new Set(burst.map((a) => a.worker))).toEqual(new Set(['0', '1']));
    });

    it("takes a role's permission change into account on the next request, on every worker", async () => {
      const role = await call('POST', '/rbac/roles', {
        token: owner,
        body: { name: 'directory-reader', permissions: ['users.list'] },
      });
      expect(role.status, JSON.stringify(role.body)).toBe(201);
      const invited = await call('POST', '/auth/invite', {
        token: owner,
        body: { email: 'reader@example.com', role_id: role.body.id },
      });
      expect(invited.status, JSON.stringify(invited.body)).toBe(202);
      const accepted = await call('POST', '/auth/accept-invite', {
        body: { token: await inviteToken('reader@example.com'), name: 'Reader', password },
      });
      expect(accepted.status, JSON.stringify(accepted.body)).toBe(201);
      const reader = accepted.body.access_token as string;
      // both workers have the reader's access cached
      const before = await Promise.all(Array.from({ length: 6 }, () => call('GET', '/users', { token: reader })));
      expect(before.map((a) => a.status)).toEqual(Array(6).fill(200));
      expect(new Set(before.map((a) => a.worker))).toEqual(new Set(['0', '1']));

      const changed = await call('PUT', `/rbac/roles/${role.body.id as string}`, {
        token: owner,
        body: { permissions: [] },
      });
      expect(changed.status, JSON.stringify(changed.body)).toBe(200);

      const after = await Promise.all(Array.from({ length: 6 }, () => call('GET', '/users', { token: reader })));
      expect(after.map((a) => a.status)).toEqual(Array(6).fill(403));
      expect(new Set(after.map((a) => a.worker))).toEqual(new Set(['0', '1']));
    }, 120_000);

    it('gives an idempotent command replayed at once on both workers one effect', async () => {
      const key = randomUUID();
      const name = `replayed-${key.slice(0, 8)}`;
      const answers = await Promise.all(
        Array.from({ length: 8 }, () =>
          call('POST', '/rbac/roles', {
            token: owner,
            headers: { 'idempotency-key': key },
            body: { name, permissions: ['users.list'] },
          }),
        ),
      );
      expect(new Set(answers.map((a) => a.worker))).toEqual(new Set(['0', '1']));
      const created = answers.filter((a) => a.status === 201);
      expect(created.length, JSON.stringify(answers.map((a) => [a.status, a.body]))).toBeGreaterThan(0);
      // the others are the same answer replayed, or told the first is still in progress (409) — never a second role
      for (const a of answers) expect([201, 409], JSON.stringify(a.body)).toContain(a.status);
      expect(new Set(created.map((a) => a.body.id as string)).size).toBe(1);
      const roles = await call('GET', '/rbac/roles', { token: owner });
      expect(roles.status).toBe(200);
      const listed = (roles.body.data ?? roles.body) as { name: string }[];
      expect(listed.filter((r) => r.name === name)).toHaveLength(1);
    });

    it('delivers to a websocket on one worker a notification whose command went through the other', async () => {
      let socketWorker: string | undefined;
      const socket = new WebSocket(`ws://127.0.0.1:${port}/v1/notify/ws`);
      socket.on('upgrade', (res) => (socketWorker = res.headers['x-platform-worker'] as string | undefined));
      const messages: { type: string; subject?: string; notification?: { subject?: string } }[] = [];
      socket.on('message', (raw) => messages.push(JSON.parse((raw as Buffer).toString('utf8'))));
      await new Promise<void>((resolve, reject) => {
        socket.once('open', () => resolve());
        socket.once('error', reject);
      });
      try {
        socket.send(JSON.stringify({ type: 'auth', token: owner }));
        await pollUntil(
          () => Promise.resolve(messages),
          (m) => m.some((x) => x.type === 'ready'),
          { timeoutMs: 15_000, everyMs: 50, what: 'the socket ready' },
        );
        expect(['0', '1']).toContain(socketWorker);
        // the command goes on new connections until one lands on the other worker
        let subject = '';
        for (let attempt = 0; attempt < 10 && !subject; attempt += 1) {
          const candidate = `across-${attempt}-${randomUUID().slice(0, 8)}`;
          const sent = await call('POST', '/notify', {
            token: owner,
            body: {
              channel: 'websocket',
              recipient: { userId: ownerId },
              subject: candidate,
              body: 'from the other worker',
            },
          });
          expect(sent.status, JSON.stringify(sent.body)).toBe(202);
          if (sent.worker !== socketWorker) subject = candidate;
        }
        expect(subject).not.toBe('');
        await pollUntil(
          () => Promise.resolve(messages),
          (m) => m.some((x) => x.type === 'notification' && JSON.stringify(x).includes(subject)),
          { timeoutMs: 30_000, everyMs: 100, what: 'the notification on the socket' },
        );
      } finally {
        socket.close();
      }
    }, 90_000);

    it('drains every worker on SIGTERM after the workload and exits 0 with no worker left', async () => {
      const workers = nodeChildrenOf(server.child.pid!);
      expect(workers).toHaveLength(2);
      server.child.kill('SIGTERM');
      expect(await server.exited).toBe(0);
      for (const pid of workers) expect(() => process.kill(pid, 0)).toThrow();
      expect(server.output()).toContain('draining the HTTP workers');
    }, 60_000);
  });
};
