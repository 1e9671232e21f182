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
const increment = async (counter: string, answers: Answer[]): Promise<void> => {
  const key = randomUUID();
  for (let attempt = 0; attempt < 60; attempt += 1) {
    const answer = await send(`/v1/tally/counters/${counter}/increment`, {
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
}, 180_000);
afterAll(async () => {
  await split?.stop();
});

describe.each(['SIGTERM', 'SIGKILL'] as const)('write-api restarted (%s) while clients increment', (signal) => {
  it('acknowledges every increment exactly once, says Retry-After on every 5xx, and opens no circuit', async () => {
    // a counter per client: increments of one counter from several clients would race on its version (409)
    const counters = Array.from({ length: CLIENTS }, (_, i) => `${signal}-${i}`);
    for (const id of counters)
      expect(
        (await send('/v1/tally/counters', { method: 'POST', body: JSON.stringify({ id, name: 'n' }) })).status,
      ).toBe(201);
    const answers: Answer[] = [];
    let restarted = false;
    const acknowledged = counters.map(() => 0);
    const clients = counters.map(async (counter, i) => {
      // each client keeps incrementing until the restart is over and a little after
      for (let afterRestart = 0; afterRestart < 5;) {
        await increment(counter, answers);
        acknowledged[i]! += 1;
        if (restarted) afterRestart += 1;
      }
    });
    try {
      await sleep(300);
      await split.restartRole('write-api', signal);
    } finally {
      restarted = true;
    }
    // every client done before judging (one refused for good must not run on into the next test)
    const settled = await Promise.allSettled(clients);
    for (const s of settled) if (s.status === 'rejected') throw s.reason;

    // the very next request after the restart is served: no circuit was opened by it
    const next = await send(`/v1/tally/counters/${counters[0]}/increment`, {
      method: 'POST',
      headers: { 'idempotency-key': randomUUID() },
      body: JSON.stringify({ by: 1 }),
    });
    expect(next.status).toBe(200);
    acknowledged[0]! += 1;

    const failures = answers.filter((a) => a.status >= 500);
    expect(failures.filter((a) => a.retryAfter === null)).toEqual([]);
    expect(failures.filter((a) => /circuit open/.test(a.detail))).toEqual([]);
    // exactly once: what each counter holds is what its client was told
    expect(await Promise.all(counters.map(value))).toEqual(acknowledged);
  }, 180_000);
});

async function value(counter: string): Promise<number> {
  const res = await fetch(`${split.url}/v1/tally/counters/${counter}`, {
    headers: { authorization: `Bearer ${token}` },
  });
  return ((await res.json()) as { value: number }).value;
}
