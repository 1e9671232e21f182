import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { clusterSuite } from '../support/cluster-suite';
import { requireEnv } from '../support/env';

// with Redis (the test server of scripts/test-infra.sh, under a key prefix of its own): rate
// windows, idempotency markers, locks and the access and billing epochs live there
const prefix = `cluster-${randomBytes(4).toString('hex')}:`;
clusterSuite('on its embedded engines with Redis', {
  REDIS_URL: requireEnv('TEST_REDIS_URL'),
  REDIS_KEY_PREFIX: prefix,
});

describe('the Redis the workers shared', () => {
  it('holds what they counted (rate windows, idempotency markers) under the platform’s prefix', async () => {
    const redis = new Redis(requireEnv('TEST_REDIS_URL'));
    try {
      const keys = await redis.keys(`${prefix}*`);
      expect(keys.length).toBeGreaterThan(0);
    } finally {
      redis.disconnect();
    }
  });
});
