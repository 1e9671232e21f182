import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimTasks, enqueueTask, finishTask } from '../../../commands/files/tasks';
import type { TestDatabase } from '../../support/db';
import { createTestDatabase } from '../../support/db';

/**
 * The files workers' queue on PostgreSQL (files.tasks): scans in the order they arrived, newest
 * first once more than 1,000 wait (spec 002: a fresh upload is not stuck behind a backlog), and a
 * claimed task is leased (no second worker takes it until the lease ends).
 */
let database: TestDatabase;
const base = Date.parse('2026-01-01T00:00:00Z');
const at = (seconds: number) => new Date(base + seconds * 1000);
const now = at(100_000);
const options = { leaseMs: 60_000, newestFirstOver: 1000 };

beforeAll(async () => {
  database = await createTestDatabase('files_tasks');
});
afterAll(async () => {
  await database?.drop();
});

const enqueueScans = async (tenantId: string, count: number) => {
  for (let i = 0; i < count; i += 1)
    await enqueueTask(database.db, { kind: 'scan', tenantId, fileId: `f-${String(i).padStart(5, '0')}`, at: at(i) });
};
const clear = () => database.db.query('DELETE FROM files.tasks');

describe('scans waiting', () => {
  it('are taken oldest first while 1,000 or fewer wait', async () => {
    await clear();
    await enqueueScans('t-a', 1000);
    const [first] = await claimTasks(database.db, 'scan', now, 1, options);
    expect(first).toMatchObject({ fileId: 'f-00000', attempts: 1 });
  });

  it('are taken newest first once more than 1,000 wait', async () => {
    await clear();
    await enqueueScans('t-a', 1001);
    const claimed = await claimTasks(database.db, 'scan', now, 2, options);
    expect(claimed.map((t) => t.fileId)).toEqual(['f-01000', 'f-00999']);
  });

  it('are leased: a claimed task is not claimed again before its lease ends, and a finished one is gone', async () => {
    await clear();
    await enqueueScans('t-b', 1);
    const [task] = await claimTasks(database.db, 'scan', now, 10, options);
    expect(await claimTasks(database.db, 'scan', new Date(now.getTime() + 59_000), 10, options)).toEqual([]);
    expect(await claimTasks(database.db, 'scan', new Date(now.getTime() + 60_000), 10, options)).toMatchObject([
      { fileId: 'f-00000', attempts: 2 },
    ]);
    await finishTask(database.db, task!);
    expect(await claimTasks(database.db, 'scan', new Date(now.getTime() + 200_000), 10, options)).toEqual([]);
  });
});
