import { Redis } from 'ioredis';
import type { Clock } from '../runtime/clock';
import { systemClock } from '../runtime/clock';
import { assertHits, assertTtl, type KeyValueCache } from './port';

export interface RedisCacheOptions {
  /** REDIS_URL, e.g. redis://:password@host:6379/0 */
  url: string;
  /** prepended to every key, so several environments can share one Redis */
  keyPrefix?: string;
  connectTimeoutMs?: number;
  /** a command that has not answered by then fails (the caller falls back) instead of waiting */
  commandTimeoutMs?: number;
  /** connection errors; commands report their own failures to their callers */
  onError?: (error: Error) => void;
  clock?: Clock;
}

/**
 * INCR and PEXPIRE in one script, so no crash or race between them can leave a counter that never
 * expires or a window opened twice. A counter found without expiry (written by hand, or by an older
 * version) gets one, so a rate limit can never stick forever.
 */
const INCR_WINDOW = `
local count = redis.call('INCRBY', KEYS[1], ARGV[2])
if count == tonumber(ARGV[2]) then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {count, ttl}
`;

type WithIncrWindow = Redis & { incrWindow(key: string, windowMs: number, by: number): Promise<[number, number]> };

/**
 * Production: Redis or Valkey through ioredis. Tuned to fail fast: while Redis is down a command
 * errors at once (no offline queue, one retry) instead of queueing until memory runs out, so rate
 * limits and replay guards can take their fallback path. The client keeps reconnecting meanwhile.
 */
export const openRedisCache = async (options: RedisCacheOptions): Promise<KeyValueCache> => {
  const clock = options.clock ?? systemClock;
  const redis = new Redis(options.url, {
    keyPrefix: options.keyPrefix,
    lazyConnect: true,
    enableOfflineQueue: false,
    // Commands issued in the same tick share one write: the gateway counts two keys per request.
    enableAutoPipelining: true,
    maxRetriesPerRequest: 1,
    connectTimeout: options.connectTimeoutMs ?? 2_000,
    commandTimeout: options.commandTimeoutMs ?? 1_000,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2_000),
  }) as WithIncrWindow;
  // Without a listener ioredis prints every reconnect failure; callers see failures on their calls.
  redis.on('error', (error: Error) => options.onError?.(error));
  redis.defineCommand('incrWindow', { numberOfKeys: 1, lua: INCR_WINDOW });

  try {
    await redis.connect();
  } catch (error) {
    redis.disconnect(); // stop the reconnect loop: the caller gets the error and decides
    throw error;
  }

  return {
    kind: 'redis',
    get: (key) => redis.get(key),
    getMany: async (keys) => (keys.length === 0 ? [] : redis.mget(...keys)),
    async set(key, value, ttlMs) {
      assertTtl(ttlMs);
      await redis.set(key, value, 'PX', ttlMs);
    },
    async setIfAbsent(key, value, ttlMs) {
      assertTtl(ttlMs);
      return (await redis.set(key, value, 'PX', ttlMs, 'NX')) === 'OK';
    },
    async incrWindow(key, windowMs, by = 1) {
      assertTtl(windowMs);
      assertHits(by);
      const [count, ttl] = await redis.incrWindow(key, windowMs, by);
      return { count, resetAt: clock.now().getTime() + ttl };
    },
    async del(key) {
      await redis.del(key);
    },
    async ping() {
      await redis.ping();
    },
    async close() {
      await redis.quit().catch(() => redis.disconnect());
    },
  };
};
