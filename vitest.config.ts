import { defineConfig } from 'vitest/config';

// Suites: unit (pure, fast), int (real engines started by scripts/test-infra.sh), serial (tests that stop
// shared servers, one file at a time), e2e (the program as an operator runs it).
export default defineConfig({
  test: {
    maxWorkers: 2,
    projects: [
      { test: { name: 'unit', include: ['tests/unit/**/*.spec.ts'], environment: 'node' } },
      {
        test: {
          name: 'int', include: ['tests/int/**/*.spec.ts'], environment: 'node',
          testTimeout: 120_000, hookTimeout: 120_000, pool: 'forks',
        },
      },
      {
        // tests that stop or restart a shared server (Kafka, Redis): one file at a time, after int
        test: {
          name: 'serial', include: ['tests/serial/**/*.spec.ts'], environment: 'node',
          testTimeout: 240_000, hookTimeout: 120_000, pool: 'forks', poolOptions: { forks: { singleFork: true } },
        },
      },
      {
        test: {
          name: 'e2e', include: ['tests/e2e/**/*.spec.ts'], environment: 'node',
          testTimeout: 180_000, hookTimeout: 180_000, pool: 'forks',
        },
      },
    ],
  },
});
