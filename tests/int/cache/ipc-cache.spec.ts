import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll } from 'vitest';
import { createIpcCache } from '../../../infra/cluster/ipc-cache';
import { keyValueCacheContract } from './contract';

/**
 * The HTTP workers' cache without Redis: the primary's in-process cache over the cluster's IPC
 * channel. The primary here is a forked process of its own (tests/support/cache-primary.ts), so
 * every operation crosses a real channel and the primary's event loop, as between workers.
 */
const children: ChildProcess[] = [];
afterAll(() => {
  for (const child of children) child.kill();
});

const forkPrimary = async (): Promise<ChildProcess> => {
  const child = fork(fileURLToPath(new URL('../../support/cache-primary.ts', import.meta.url)), [], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  children.push(child);
  await new Promise<void>((resolve, reject) => {
    child.once('message', () => resolve());
    child.once('exit', (code) => reject(new Error(`the cache primary exited (${code}) before it was ready`)));
  });
  return child;
};

keyValueCacheContract('cache of a cluster primary over IPC', async () => createIpcCache(await forkPrimary()));

keyValueCacheContract('the same cache seen by two workers at once', async () => {
  // two adapters on one channel interleave their requests: the answers still go to the right caller
  const channel = await forkPrimary();
  const [a, b] = [createIpcCache(channel), createIpcCache(channel)];
  let turn = 0;
  const pick = () => (turn++ % 2 === 0 ? a : b);
  return {
    kind: 'memory',
    get: (k) => pick().get(k),
    getMany: (k) => pick().getMany(k),
    set: (k, v, t) => pick().set(k, v, t),
    setIfAbsent: (k, v, t) => pick().setIfAbsent(k, v, t),
    incrWindow: (k, w, by) => pick().incrWindow(k, w, by),
    del: (k) => pick().del(k),
    ping: () => pick().ping(),
    close: async () => {
      await a.close();
      await b.close();
    },
  };
});
