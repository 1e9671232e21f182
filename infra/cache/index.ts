import type { Clock } from '../runtime/clock';
import type { KeyValueCache } from './port';
import { createMemoryCache } from './memory';
import { openRedisCache } from './redis';

export type { KeyValueCache, WindowCount } from './port';

/**
 * Redis when REDIS_URL is configured, the in-process map otherwise. `clock` is the platform's: the
 * windows' ends (resetAt) are on the same time line as every other "now" of the process.
 */
export const openKeyValueCache = async (config: {
  redisUrl?: string;
  keyPrefix?: string;
  clock?: Clock;
}): Promise<KeyValueCache> =>
  config.redisUrl
    ? openRedisCache({ url: config.redisUrl, keyPrefix: config.keyPrefix, clock: config.clock })
    : createMemoryCache({ clock: config.clock });
