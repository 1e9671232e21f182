import { it } from 'vitest';

/**
 * The topology of this test run: `all` (one all-in-one process, the default) or `split` (the
 * vitest project `split` sets PLATFORM_TEST_TOPOLOGY=split): the test-platform factories
 * (startTestPlatform, startIdentityPlatform) then start gateway, write-api, read-api and workers
 * as separate processes on the test PostgreSQL, Kafka and Redis, and the suite talks to the gateway.
 */
export const SPLIT = process.env.PLATFORM_TEST_TOPOLOGY === 'split';

/**
 * A test that cannot run against separate processes, with the reason (it replaces a port of the
 * running process with a function, say): skipped in the split run, where the report counts it.
 */
export const allInOneOnly = (reason: string) => {
  if (!reason) throw new Error('say why the test runs in one process only');
  return it.skipIf(SPLIT);
};
