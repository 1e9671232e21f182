import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestDatabase } from '../../support/db';
import { createTestDatabase } from '../../support/db';
import { pollUntil } from '../../support/poll';
import { testProgramArgs } from '../../support/test-programs';
import { freePort } from '../../support/process';
import type { LogLine } from '../../support/split';

/**
 * The process policy (infra/runtime/process-policy.ts; docs/decisions.md) in a process of its own,
 * as `platform serve` runs it: errors that reach the top of the process after their request has
 * been answered — an unheard stream error, a rejected promise nobody awaits, a socket's EPIPE —
 * are logged and the process keeps serving; a programming error thrown out of a timer is logged
 * as fatal, the requests in flight are answered, and the process exits with status 1.
 */
const ROOT = fileURLToPath(new URL('../../..', import.meta.url));

let database: TestDatabase;
let child: ChildProcess;
let url: string;
const lines: LogLine[] = [];
let exited: Promise<number | null>;

beforeAll(async () => {
  database = await createTestDatabase('policy');
  const port = await freePort();
  child = spawn(process.execPath, testProgramArgs('role-server'), {
    cwd: ROOT,
    env: {
      ...process.env,
      PLATFORM_TEST_ROLE: 'write-api',
      PLATFORM_TEST_SERVICES: 'process-fixture',
      PLATFORM_ENV: 'test',
      LOG_LEVEL: 'info',
      PORT: String(port),
      DATABASE_URL: database.url,
      DATA_DIR: join(tmpdir(), `platform-policy-${process.pid}`),
      ROOT_URL: `http://127.0.0.1:${port}`,
      PLATFORM_SECRET_KEY: randomBytes(32).toString('base64'),
    },
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  child.channel?.unref();
  exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
  let output = '';
  let pending = '';
  url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the role did not start:\n${output}`)), 90_000);
    child.stdout!.on('data', (chunk: Buffer) => {
      pending += chunk.toString();
      const complete = pending.split('\n');
      pending = complete.pop()!;
      for (const line of complete) {
        const ready = /^READY (\S+)/.exec(line);
        if (ready) {
          clearTimeout(timer);
          resolve(ready[1]!);
        } else if (line.startsWith('{')) lines.push(JSON.parse(line) as LogLine);
        else output += `${line}\n`;
      }
    });
    child.stderr!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    void exited.then((code) => reject(new Error(`the role exited (${code}) before it was ready:\n${output}`)));
  });
});
afterAll(async () => {
  if (child && child.exitCode === null && child.signalCode === null) {
    child.kill('SIGKILL');
    await exited;
  }
  await database?.drop();
});

const post = (path: string) => fetch(`${url}/v1/process-fixture/${path}`, { method: 'POST' });

const policyLines = (level: number) =>
  lines.filter((l) => l.level === level && /^an error (reached|left) the process/.test(l.msg));

describe('a platform process an error reaches outside any request', () => {
  it('logs an unheard stream error, an unawaited rejection and a socket error with their context, and keeps serving', async () => {
    for (const fault of ['stream-error', 'rejection', 'socket-error']) expect((await post(fault)).status).toBe(202);
    const logged = await pollUntil(
      async () => policyLines(50),
      (found) => found.length >= 3,
      { timeoutMs: 20_000, what: 'three contained errors logged' },
    );
    const byMessage = (text: string) => logged.find((l) => (l.err as { message?: string }).message === text);
    expect(byMessage('a stream failed outside any request')).toMatchObject({
      role: 'write-api',
      fault: 'uncaughtException',
      emitter: 'Readable',
      reason: expect.stringMatching(/'error' event of one stream or socket/),
      err: { type: 'Error', stack: expect.stringContaining('process-fixture.ts') },
    });
    expect(byMessage('a promise rejected with nobody awaiting it')).toMatchObject({
      fault: 'unhandledRejection',
      reason: expect.stringMatching(/promise rejected/),
    });
    expect(byMessage('write EPIPE')).toMatchObject({
      fault: 'uncaughtException',
      code: 'EPIPE',
      reason: expect.stringMatching(/one I\/O operation \(EPIPE\)/),
    });
    // the same process still answers
    expect(child.exitCode).toBeNull();
    expect((await fetch(`${url}/live`)).status).toBe(200);
    expect((await post('slow')).status).toBe(200);
    expect(policyLines(60)).toEqual([]);
  });

  it('on an error thrown out of a timer, logs it as fatal, answers the requests in flight and exits with status 1', async () => {
    const slow = post('slow');
    await pollUntil(
      async () => ((await (await post('slow/in-flight')).json()) as { inFlight: number }).inFlight,
      (n) => n === 1,
      { timeoutMs: 20_000, what: 'the slow request in flight' },
    );
    expect((await post('fatal')).status).toBe(202);
    // drained: the request in flight gets its answer
    expect((await slow).status).toBe(200);
    expect(await exited).toBe(1);
    expect(policyLines(60)).toEqual([
      expect.objectContaining({
        role: 'write-api',
        fault: 'uncaughtException',
        reason: expect.stringMatching(/state is now unknown/),
        err: expect.objectContaining({ type: 'TypeError', message: 'the bookkeeping of this process is broken' }),
      }),
    ]);
  });
});
