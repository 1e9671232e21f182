import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkpointOf, EventStore, LOG_START } from '../../../infra/eventstore/event-store';
import { systemClock, uuidV7Ids } from '../../../infra/runtime/clock';
import type { TestDatabase } from '../../support/db';
import { createTestDatabase } from '../../support/db';

/**
 * The global log's order is the number of the writing transaction, then the position. Transaction
 * ids grow by a digit now and then (9,999,999 → 10,000,000); a reader that ordered them as text
 * would put 10,000,000 before 9,999,999, take a page from the wrong end and move its checkpoint
 * past events it never read. The events below carry small transaction ids chosen to straddle a
 * digit (9, 10, 11: committed long ago, so visible to every reader).
 */
let t: TestDatabase;
const store = new EventStore(systemClock, uuidV7Ids);

beforeAll(async () => {
  t = await createTestDatabase('xidorder');
  for (const [i, xid] of ['9', '10', '11', '99', '100'].entries()) {
    await t.db.query(
      `INSERT INTO es.events (transaction_id, stream_id, stream_version, event_id, type, schema_version, tenant_id, occurred_at, data)
       VALUES ($1::xid8, $2, 1, $3, 'tally.counter.created', 1, 'tenant-a', now(), '{}')`,
      [xid, `tally.counter:tenant-a:c${i}`, randomUUID()],
    );
  }
});
afterAll(async () => t?.drop());

const xidsOf = (events: { transactionId: bigint }[]) => events.map((e) => Number(e.transactionId));

describe('given events of transactions 9, 10, 11, 99 and 100', () => {
  it('reads them in the order of the numbers, not of their text', async () => {
    expect(xidsOf(await store.readAll(t.db, LOG_START, 10))).toEqual([9, 10, 11, 99, 100]);
  });

  it('pages through all of them one at a time, skipping none', async () => {
    const read: number[] = [];
    let after = LOG_START;
    for (;;) {
      const page = await store.readAll(t.db, after, 1);
      if (page.length === 0) break;
      read.push(...xidsOf(page));
      after = checkpointOf(page[0]!);
    }
    expect(read).toEqual([9, 10, 11, 99, 100]);
  });

  it('names the newest of them as the head of the log', async () => {
    expect((await store.headCheckpoint(t.db)).transactionId).toBe(100n);
  });
});
