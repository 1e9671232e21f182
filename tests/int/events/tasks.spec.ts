import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ClaimedTask } from '../../../infra/tasks';
import { registerTaskHandler } from '../../../infra/tasks';
import type { Body } from '../../support/events';
import { EVENTS_TEST_ENV, eventually, userClient } from '../../support/events';
import type { TestPlatform } from '../../support/platform';
import { startTestPlatform } from '../../support/platform';

/**
 * The task queue (spec 002: "a separate task queue carries transactional tasks"): a task exists
 * exactly when the command that queued it committed, runs at least once with retries and backoff,
 * and each tenant sees its own tasks in GET /events/tasks. All-in-one: handlers are registered in process.
 */
describe('the task queue', () => {
  let platform: TestPlatform;
  const tenantA = randomUUID();
  const tenantB = randomUUID();
  const runs: ClaimedTask[] = [];

  beforeAll(async () => {
    platform = await startTestPlatform({ role: 'all', services: ['events'], env: EVENTS_TEST_ENV });
    registerTaskHandler(platform.kernel, 'test.greeting.send', async (task) => {
      runs.push(task);
      if (task.attempt === 1) throw new Error('the mail server said no');
    });
  });
  afterAll(async () => platform?.close());

  const meta = (tenantId: string) => ({
    tenantId,
    actorId: 'tester',
    traceId: randomUUID().replace(/-/g, ''),
    correlationId: null,
    causationId: null,
  });

  it('runs a task queued in a committed command, retrying after a failure, and lists it for its tenant only', async () => {
    const id = await platform.kernel.commands.run(meta(tenantA), async (uow) =>
      uow.enqueueTask({ type: 'test.greeting.send', payload: { to: 'ada' } }),
    );
    const done = await eventually(async () => {
      const res = await userClient(platform, tenantA).call('GET', `/events/tasks/${id}`);
      return res.status === 200 && res.body.status === 'done' ? res.body : null;
    });
    expect(done).toMatchObject({
      id,
      type: 'test.greeting.send',
      payload: { to: 'ada' },
      attempts: 2,
      lastError: null,
      completedAt: expect.any(String),
    });
    expect(runs.filter((r) => r.id === id).map((r) => r.attempt)).toEqual([1, 2]);
    expect(runs.find((r) => r.id === id)?.tenantId).toBe(tenantA);
    expect(
      (await userClient(platform, tenantA).call('GET', '/events/tasks')).body.data.map((t: Body) => t.id),
    ).toContain(id);
    expect((await userClient(platform, tenantB).call('GET', `/events/tasks/${id}`)).status).toBe(404);
    expect((await userClient(platform, tenantB).call('GET', '/events/tasks')).body.data).toEqual([]);
  });

  it('never runs the task of a command that failed: it was never written', async () => {
    const failing = platform.kernel.commands.run(meta(tenantB), async (uow) => {
      uow.enqueueTask({ type: 'test.greeting.send', payload: { to: 'nobody' } });
      await uow.tx.query('SELECT 1/0');
    });
    await expect(failing).rejects.toThrow();
    // deliberately let the workers poll: a rolled-back enqueue must leave no task (an absence)
    await new Promise((r) => setTimeout(r, 300));
    const { rows } = await platform.kernel.db.query<{ n: string }>(
      `SELECT count(*) AS n FROM events.tasks WHERE tenant_id = $1`,
      [tenantB],
    );
    expect(Number(rows[0]!.n)).toBe(0);
    expect(runs.some((r) => r.payload.to === 'nobody')).toBe(false);
  });
});
