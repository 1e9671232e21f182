import type pg from 'pg';
import type { Kernel } from '../../infra/kernel';
import type { Worker } from '../../infra/services';
import { eventsContext } from '../../commands/events/context';
import type { Arrivals } from '../../commands/events/delivery';
import { deliverTurn, subscriptionsWithWork, targetOf } from '../../commands/events/delivery';
import { RECORDS_CHANNEL } from '../../commands/events/fanout';
import { subscriptionLockName } from '../../commands/events/locks';
import { subscriptionById } from '../../commands/events/lookups';
import type { Loop } from '../loop';
import { startLoop } from '../loop';

/**
 * Delivery: EVENTS_DELIVERY_CONCURRENCY loops per process, each taking a subscription with work,
 * locking it (a session advisory lock on the process's own connection: no transaction stays open
 * while handlers run) and giving it a turn. The loops wake when the fan-out copies new records
 * (LISTEN events_records) and otherwise poll; a retry that is due wakes them too.
 */
export const deliveryWorker = (kernel: Kernel): Worker & { step(): Promise<boolean> } => {
  let session: pg.PoolClient | null = null;
  let opening: Promise<pg.PoolClient> | null = null;
  let loops: Loop[] = [];
  /** subscriptions a loop of this process is delivering (the session lock is re-entrant within a session) */
  const busy = new Set<string>();
  let retryTimer: NodeJS.Timeout | null = null;
  /** turns running in this process: told when the fan-out copied new records, so they read them */
  const listeners = new Set<() => void>();
  const arrivals: Arrivals = {
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
  const wakeAll = () => {
    for (const l of loops) l.wake();
    for (const l of listeners) l();
  };

  const sessionOf = async (): Promise<pg.PoolClient> => {
    if (session) return session;
    opening ??= (async () => {
      const client = await kernel.db.connect();
      client.on('error', () => {
        if (session === client) session = null;
      });
      client.on('notification', wakeAll);
      await client.query(`LISTEN ${RECORDS_CHANNEL}`);
      session = client;
      return client;
    })().finally(() => {
      opening = null;
    });
    return opening;
  };

  const wakeAt = (at: Date | null) => {
    if (!at || retryTimer) return;
    retryTimer = setTimeout(
      () => {
        retryTimer = null;
        wakeAll();
      },
      Math.max(0, at.getTime() - kernel.clock.now().getTime()) + 5,
    );
    retryTimer.unref();
  };

  /** a lock statement that fails means the session is gone (and its locks with it): the next step opens another */
  const onSession = async <T>(client: pg.PoolClient, fn: () => Promise<T>): Promise<T> => {
    try {
      return await fn();
    } catch (error) {
      if (session === client) {
        session = null;
        client.release(true);
      }
      throw error;
    }
  };
  const tryLock = (client: pg.PoolClient, name: string) =>
    onSession(
      client,
      async () =>
        (
          await client.query<{ locked: boolean }>('SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS locked', [
            name,
          ])
        ).rows[0]?.locked === true,
    );
  const unlock = (client: pg.PoolClient, name: string) =>
    onSession(client, async () => {
      await client.query('SELECT pg_advisory_unlock(hashtextextended($1, 0))', [name]);
    });

  const step = async (): Promise<boolean> => {
    const ctx = eventsContext(kernel);
    const lock = await sessionOf();
    const { ids, nextRetryAt } = await subscriptionsWithWork(kernel, 50);
    wakeAt(nextRetryAt);
    for (const id of ids) {
      if (busy.has(id)) continue;
      busy.add(id);
      try {
        const name = subscriptionLockName(id);
        if (!(await tryLock(lock, name))) continue;
        try {
          const sub = await subscriptionById(kernel.db, id);
          const target = sub?.status === 'active' ? await targetOf(kernel, ctx, sub) : null;
          if (sub && target && (await deliverTurn(kernel, ctx, sub, target, arrivals)) > 0) return true;
        } finally {
          await unlock(lock, name);
        }
      } finally {
        busy.delete(id);
      }
    }
    return false;
  };

  return {
    name: 'events.delivery',
    step,
    start() {
      const ctx = eventsContext(kernel);
      loops = Array.from({ length: ctx.settings.deliveryConcurrency }, () =>
        startLoop(step, {
          idleMs: ctx.settings.pollIntervalMs,
          onError: (error, failures) => {
            if (failures === 1 || failures % 30 === 0)
              kernel.logger.warn({ err: error, failures }, 'event delivery failed; retrying');
          },
        }),
      );
    },
    async stop() {
      await Promise.all(loops.map((l) => l.stop()));
      loops = [];
      if (retryTimer) clearTimeout(retryTimer);
      const open = session ?? (await opening?.catch(() => null)) ?? null;
      session = null;
      open?.release(true);
    },
  };
};
