import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LogCheckpoint } from '../../../infra/eventstore/event-store';
import { checkpointOf, EventStore, LOG_START } from '../../../infra/eventstore/event-store';
import { inTransaction } from '../../../infra/postgres/db';
import { systemClock, uuidV7Ids } from '../../../infra/runtime/clock';
import { compare } from '../../../infra/projections/engine';
import type { TestDatabase } from '../../support/db';
import { createTestDatabase } from '../../support/db';

let t: TestDatabase;
const store = new EventStore(systemClock, uuidV7Ids);
const meta = { tenantId: 'tenant-a', actorId: null, traceId: null, correlationId: null, causationId: null };

beforeAll(async () => {
  t = await createTestDatabase('order');
});
afterAll(async () => t.drop());

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A reader that follows the global log the way the relay and the projectors do. */
const follow = () => {
  const seen: { eventId: string; at: LogCheckpoint }[] = [];
  const errors: unknown[] = [];
  let after = LOG_START;
  let running = true;
  const done = (async () => {
    while (running) {
      const batch = await store.readAll(t.db, after, 500).catch((error: unknown) => {
        errors.push(error);
        return [];
      });
      for (const e of batch) seen.push({ eventId: e.eventId, at: checkpointOf(e) });
      if (batch.length) after = checkpointOf(batch[batch.length - 1]!);
      else await sleep(5);
    }
  })();
  return {
    seen,
    errors,
    get after() {
      return after;
    },
    stop: async () => {
      running = false;
      await done;
    },
  };
};

describe('the global log while a slow transaction holds events uncommitted', () => {
  it('never lets a reader skip the slow events, in 100 rounds, and delivers in commit order', async () => {
    const reader = follow();
    const written: string[] = [];
    const round = async (r: number) => {
      const client = await t.db.connect();
      await client.query('BEGIN');
      // the slow transaction gets its position first, then commits after 1,000 later appends
      const slow = await store.append(
        client,
        [{ streamId: `slow:tenant-a:${r}`, expectedVersion: 0, events: [{ type: 'tally.slow.written', data: { r } }] }],
        meta,
      );
      const fast = (async () => {
        for (let i = 0; i < 100; i += 1) {
          const events = await inTransaction(t.db, (tx) =>
            store.append(
              tx,
              [
                {
                  streamId: `fast:tenant-a:${r}-${i}`,
                  expectedVersion: 0,
                  events: Array.from({ length: 10 }, (_, k) => ({ type: 'tally.fast.written', data: { r, i, k } })),
                },
              ],
              meta,
            ),
          );
          written.push(...events.map((e) => e.eventId));
        }
      })();
      await Promise.all([fast, sleep(2000)]);
      await client.query('COMMIT');
      client.release();
      written.push(...slow.map((e) => e.eventId));
    };
    // ten rounds at a time, so the test keeps to its time budget; each round is independent
    for (let wave = 0; wave < 10; wave += 1)
      await Promise.all(Array.from({ length: 10 }, (_, k) => round(wave * 10 + k)));
    const deadline = Date.now() + 30_000;
    while (reader.seen.length < written.length && Date.now() < deadline) await sleep(50);
    await reader.stop();

    expect(reader.errors).toEqual([]);
    expect(written).toHaveLength(10 * 10 * 1001);
    const ids = reader.seen.map((s) => s.eventId);
    expect(new Set(ids).size).toBe(ids.length);
    expect(new Set(ids)).toEqual(new Set(written));
    for (let i = 1; i < reader.seen.length; i += 1)
      expect(compare(reader.seen[i - 1]!.at, reader.seen[i]!.at)).toBeLessThan(0);
    // commit order is not position order: some events were read after events with higher positions
    const overtaken = reader.seen.some((s, i) => i > 0 && s.at.position < reader.seen[i - 1]!.at.position);
    expect(overtaken).toBe(true);
  }, 240_000);
});
