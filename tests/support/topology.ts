/**
 * The topology of this test run: `all` (one all-in-one process, the default) or `split` (the
 * vitest project `split` sets PLATFORM_TEST_TOPOLOGY=split): the test-platform factories
 * (startTestPlatform, startIdentityPlatform) then start gateway, write-api, read-api and workers
 * as separate processes on the test PostgreSQL, Kafka and Redis, and the suite talks to the gateway.
 */
export const SPLIT = process.env.PLATFORM_TEST_TOPOLOGY === 'split';
