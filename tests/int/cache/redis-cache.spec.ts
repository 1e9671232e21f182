import { randomUUID } from 'node:crypto';
import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { openRedisCache } from '../../../infra/cache/redis';
import { requireEnv } from '../../support/env';
import { startTcpProxy } from '../../support/tcp-proxy';
import { keyValueCacheContract } from './contract';

const redisUrl = requireEnv('TEST_REDIS_URL');

keyValueCacheContract('Redis cache', () => openRedisCache({ url: redisUrl, keyPrefix: 'test:' }));

describe('a Redis cache whose connection drops', () => {
  it('fails calls at once while Redis is away, and works again once it is back', async () => {
    const target = new URL(redisUrl);
    const proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 6379) });
    const cache = await openRedisCache({ url: `redis://127.0.0.1:${proxy.port}`, keyPrefix: 'test:' });
    const key = `outage:${randomUUID()}`;
    try {
      await cache.set(key, 'before', 60_000);

      await proxy.cut();
      const started = Date.now();
      await expect(cache.get(key)).rejects.toThrow();
      await expect(cache.incrWindow(`${key}:window`, 1_000)).rejects.toThrow();
      await expect(cache.ping()).rejects.toThrow();
      expect(Date.now() - started).toBeLessThan(1_500);

      await proxy.restore();
      await expect
        .poll(() => cache.get(key).catch(() => 'still down'), { timeout: 10_000, interval: 200 })
        .toBe('before');
    } finally {
      await cache.close();
      await proxy.close();
    }
  });
});

/** a port on which nothing listens: bound, then released */
const closedPort = async (): Promise<number> => {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
};

describe('a Redis that cannot be reached', () => {
  it('fails to open quickly instead of waiting for it', async () => {
    const started = Date.now();
    await expect(
      openRedisCache({ url: `redis://127.0.0.1:${await closedPort()}`, connectTimeoutMs: 500 }),
    ).rejects.toThrow();
    expect(Date.now() - started).toBeLessThan(3_000);
  });
});
