import { defineConfig } from 'vitest/config';

// Three suites: unit (pure, fast), int (real engines started by scripts/test-infra.sh), e2e (the running server over HTTP).
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
        test: {
          name: 'e2e', include: ['tests/e2e/**/*.spec.ts'], environment: 'node',
          testTimeout: 180_000, hookTimeout: 180_000, pool: 'forks',
        },
      },
    ],
  },
});
