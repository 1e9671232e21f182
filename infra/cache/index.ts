import type { KeyValueCache } from './port';
import { createMemoryCache } from './memory';
import { openRedisCache } from './redis';

export type { KeyValueCache, WindowCount } from './port';

/** Redis when REDIS_URL is configured, the in-process map otherwise. */
export const openKeyValueCache = async (config: { redisUrl?: string; keyPrefix?: string }): Promise<KeyValueCache> =>
  config.redisUrl ? openRedisCache({ url: config.redisUrl, keyPrefix: config.keyPrefix }) : createMemoryCache();
