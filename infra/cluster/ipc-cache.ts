import { randomBytes } from 'node:crypto';
import type { KeyValueCache, WindowCount } from '../cache/port';
import { assertHits, assertTtl } from '../cache/port';

/**
 * The KeyValueCache of the HTTP workers of one cluster without Redis (infra/cluster/primary.ts):
 * the primary holds the one in-memory cache (infra/cache/memory.ts) and runs each operation a
 * worker sends it over the cluster's IPC channel. Every operation runs to completion on the
 * primary's event loop before the next starts, so setIfAbsent and incrWindow stay atomic across
 * workers exactly as they are inside one process: a rate-limit window, a replay marker or a lock
 * is one entry whatever worker asks. A worker's own calls are answered by request id.
 */

const KIND = 'platform.cache';

type Operation = 'get' | 'getMany' | 'set' | 'setIfAbsent' | 'incrWindow' | 'del' | 'ping';

interface CacheRequest {
  kind: typeof KIND;
  id: string;
  op: Operation;
  args: unknown[];
}

interface CacheAnswer {
  kind: typeof KIND;
  id: string;
  value?: unknown;
  error?: { name: string; message: string };
}

/** the two ends of an IPC channel: a cluster worker's `process`, the primary's Worker, a forked ChildProcess */
export interface IpcChannel {
  /** optional as on `process`, which has it only when it was forked with a channel */
  send?(message: unknown): unknown;
  on(event: 'message', listener: (message: unknown) => void): unknown;
  off(event: 'message', listener: (message: unknown) => void): unknown;
}

const isRequest = (m: unknown): m is CacheRequest =>
  typeof m === 'object' && m !== null && (m as CacheRequest).kind === KIND && 'op' in m;

const isAnswer = (m: unknown): m is CacheAnswer =>
  typeof m === 'object' && m !== null && (m as CacheAnswer).kind === KIND && !('op' in m);

/** the primary's side: answers every cache request arriving on channel from cache; returns the unsubscribe */
export const serveCache = (channel: IpcChannel, cache: KeyValueCache): (() => void) => {
  const listener = (message: unknown) => {
    if (!isRequest(message)) return;
    const { id, op, args } = message;
    const run = (): Promise<unknown> => {
      switch (op) {
        case 'get':
          return cache.get(args[0] as string);
        case 'getMany':
          return cache.getMany(args[0] as string[]);
        case 'set':
          return cache.set(args[0] as string, args[1] as string, args[2] as number);
        case 'setIfAbsent':
          return cache.setIfAbsent(args[0] as string, args[1] as string, args[2] as number);
        case 'incrWindow':
          return cache.incrWindow(args[0] as string, args[1] as number, args[2] as number | undefined);
        case 'del':
          return cache.del(args[0] as string);
        case 'ping':
          return cache.ping();
      }
    };
    const reply = (answer: Omit<CacheAnswer, 'kind' | 'id'>) => {
      try {
        channel.send?.({ kind: KIND, id, ...answer });
      } catch {
        // the worker is gone: nobody waits for the answer
      }
    };
    run().then(
      (value) => reply({ value: value ?? null }),
      (error: unknown) =>
        reply({
          error: {
            name: error instanceof Error ? error.name : 'Error',
            message: error instanceof Error ? error.message : String(error),
          },
        }),
    );
  };
  channel.on('message', listener);
  return () => channel.off('message', listener);
};

/** an error of the primary's cache, rethrown here as the same kind (RangeError stays RangeError) */
const errorOf = (e: { name: string; message: string }): Error => {
  const error = e.name === 'RangeError' ? new RangeError(e.message) : new Error(e.message);
  if (e.name !== 'RangeError') error.name = e.name;
  return error;
};

/** a worker's side: the primary's cache over channel (its arguments checked here, as every adapter does) */
export const createIpcCache = (channel: IpcChannel, options: { timeoutMs?: number } = {}): KeyValueCache => {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const pending = new Map<
    string,
    { resolve: (v: unknown) => void; reject: (e: Error) => void; timer: NodeJS.Timeout }
  >();
  // ids unique per adapter: answers on a channel shared by several adapters reach only their caller
  const prefix = randomBytes(4).toString('hex');
  let next = 0;
  let closed = false;
  const listener = (message: unknown) => {
    if (!isAnswer(message)) return;
    const waiting = pending.get(message.id);
    if (!waiting) return;
    pending.delete(message.id);
    clearTimeout(waiting.timer);
    if (message.error) waiting.reject(errorOf(message.error));
    else waiting.resolve(message.value);
  };
  channel.on('message', listener);

  const call = <T>(op: Operation, ...args: unknown[]): Promise<T> => {
    if (closed) return Promise.reject(new Error('the cache is closed'));
    return new Promise<T>((resolve, reject) => {
      const id = `${prefix}:${(next = (next + 1) % Number.MAX_SAFE_INTEGER)}`;
      // the primary answers in microseconds; one that does not is gone or wedged: callers fall back as on a Redis outage
      const timer = setTimeout(() => {
        pending.delete(id);
        reject(new Error(`the cluster primary did not answer the cache's ${op} within ${timeoutMs} ms`));
      }, timeoutMs);
      timer.unref();
      pending.set(id, { resolve: resolve as (v: unknown) => void, reject, timer });
      try {
        if (!channel.send) throw new Error('this process has no IPC channel to a cluster primary');
        channel.send({ kind: KIND, id, op, args } satisfies CacheRequest);
      } catch (error) {
        pending.delete(id);
        clearTimeout(timer);
        reject(error instanceof Error ? error : new Error(String(error)));
      }
    });
  };

  return {
    kind: 'memory',
    get: (key) => call<string | null>('get', key),
    getMany: async (keys) => (keys.length ? call<(string | null)[]>('getMany', keys) : []),
    async set(key, value, ttlMs) {
      assertTtl(ttlMs);
      await call('set', key, value, ttlMs);
    },
    async setIfAbsent(key, value, ttlMs) {
      assertTtl(ttlMs);
      return call<boolean>('setIfAbsent', key, value, ttlMs);
    },
    async incrWindow(key, windowMs, by = 1) {
      assertTtl(windowMs);
      assertHits(by);
      return call<WindowCount>('incrWindow', key, windowMs, by);
    },
    async del(key) {
      await call('del', key);
    },
    async ping() {
      await call('ping');
    },
    // the cache itself is the primary's: a worker only lets go of the channel
    async close() {
      closed = true;
      channel.off('message', listener);
      for (const [id, waiting] of pending) {
        pending.delete(id);
        clearTimeout(waiting.timer);
        waiting.reject(new Error('the cache is closed'));
      }
    },
  };
};
