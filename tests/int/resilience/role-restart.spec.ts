import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testToken } from '../../support/auth';
import type { SplitPlatform } from '../../support/split';
import { startSplitPlatform } from '../../support/split';

/**
 * write-api restarted under clients (issue 26: a restart gave hundreds of 5xx without Retry-After,
 * a planned one opened the gateway's circuit for 30 s). Clients behave as the contract tells them:
 * a 5xx with Retry-After is retried after that many seconds with the same Idempotency-Key. Every
 * increment must then be acknowledged exactly once, every 5xx must carry Retry-After, and once
 * write-api is back the very next request is served — no open circuit.
 */
let split: SplitPlatform;
const token = testToken(`tenant-${randomUUID()}`, 'u-1', ['tally.*']);
const COUNTER = 'restarted';
const CLIENTS = 4;

interface Answer {
  status: number;
  retryAfter: string | null;
  detail: string;
}

const send = async (path: string, init: RequestInit = {}): Promise<Answer> => {
  const res = await fetch(`${split.url}${path}`, {
    ...init,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...init.headers },
  });
  const body = (await res.json().catch(() => ({}))) as { detail?: string };
  return { status: res.status, retryAfter: res.headers.get('retry-after'), detail: body.detail ?? '' };
};

/** one increment as a client following the contract: retried after Retry-After, with its key, until acknowledged */
const increment = async (answers: Answer[]): Promise<void> => {
  const key = randomUUID();
  for (let attempt = 0; attempt < 60; attempt += 1) {
    const answer = await send(`/v1/tally/counters/${COUNTER}/increment`, {
      method: 'POST',
      headers: { 'idempotency-key': key },
      body: JSON.stringify({ by: 1 }),
    });
    answers.push(answer);
    if (answer.status < 300) return;
    if (answer.status < 500 || answer.retryAfter === null)
      throw new Error(`refused for good: ${JSON.stringify(answer)}`);
    await sleep(Number(answer.retryAfter) * 1000);
  }
  throw new Error('never acknowledged');
};

beforeAll(async () => {
  split = await startSplitPlatform({ services: ['tally'], auth: 'token' });
  expect(
    (await send('/v1/tally/counters', { method: 'POST', body: JSON.stringify({ id: COUNTER, name: 'n' }) })).status,
  ).toBe(201);
}, 180_000);
afterAll(async () => {
  await split?.stop();
});

describe.each(['SIGTERM', 'SIGKILL'] as const)('write-api restarted (%s) while clients increment', (signal) => {
  it('acknowledges every increment exactly once, says Retry-After on every 5xx, and opens no circuit', async () => {
    const start = await value();
    const answers: Answer[] = [];
    let restarted = false;
    let acknowledged = 0;
    const clients = Array.from({ length: CLIENTS }, async () => {
      // each client keeps incrementing until the restart is over and a little after
      for (let afterRestart = 0; afterRestart < 5;) {
        await increment(answers);
        acknowledged += 1;
        if (restarted) afterRestart += 1;
      }
    });
    await sleep(300);
    await split.restartRole('write-api', signal);
    restarted = true;
    await Promise.all(clients);

    // the very next request after the restart is served: no circuit was opened by it
    expect(
      (
        await send(`/v1/tally/counters/${COUNTER}/increment`, {
          method: 'POST',
          headers: { 'idempotency-key': randomUUID() },
          body: JSON.stringify({ by: 1 }),
        })
      ).status,
    ).toBe(200);
    acknowledged += 1;

    const failures = answers.filter((a) => a.status >= 500);
    expect(failures.filter((a) => a.retryAfter === null)).toEqual([]);
    expect(failures.filter((a) => /circuit open/.test(a.detail))).toEqual([]);
    // exactly once: what the counter holds is what the clients were told
    expect(await value()).toBe(start + acknowledged);
  }, 180_000);
});

async function value(): Promise<number> {
  const res = await fetch(`${split.url}/v1/tally/counters/${COUNTER}`, {
    headers: { authorization: `Bearer ${token}` },
  });
  return ((await res.json()) as { value: number }).value;
}
