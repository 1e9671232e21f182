/**
 * A cluster primary's cache service alone (infra/cluster/ipc-cache.ts): the in-process cache served
 * to its parent over the IPC channel, as `platform start` serves it to its HTTP workers.
 *
 *   fork('tests/support/cache-primary.ts', { execArgv: ['--import', 'tsx'] })
 */
import { createMemoryCache } from '../../infra/cache/memory';
import { serveCache } from '../../infra/cluster/ipc-cache';

if (!process.send) {
  console.error('cache-primary.ts runs as a forked child (it serves its parent over IPC)');
  process.exit(2);
}
serveCache(process, createMemoryCache());
process.send({ kind: 'ready' });
// the IPC channel closes when the test process dies, however it dies: stop with it
process.on('disconnect', () => process.exit(0));
