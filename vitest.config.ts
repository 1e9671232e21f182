import { defineConfig } from 'vitest/config';

/**
 * The HTTP-level suites that run a second time in the split topology (project split): gateway,
 * write-api, read-api and workers as separate processes on PostgreSQL, Kafka and Redis, the suite
 * talking to the gateway (tests/support/split.ts; README "Tests"; docs/kernel.md "Tests"). A new
 * service's suite joins by naming its modules (tests/support/services.ts) and being listed here.
 */
export const SPLIT_SUITES = [
  'tests/int/identity/auth.spec.ts',
  'tests/int/identity/flows.spec.ts',
  'tests/int/identity/mfa.spec.ts',
  'tests/int/identity/providers.spec.ts',
  'tests/int/identity/rbac.spec.ts',
  'tests/int/identity/access.spec.ts',
  'tests/int/identity/takeover.spec.ts',
  'tests/int/identity/delegation.spec.ts',
  'tests/int/identity/mail-notify.spec.ts',
  'tests/int/identity/sessions.spec.ts',
  'tests/int/gateway/hardening.spec.ts',
  'tests/int/money/owners.spec.ts',
  'tests/int/audit/api.spec.ts',
  'tests/int/audit/domain.spec.ts',
  'tests/int/notify/channels.spec.ts',
  'tests/int/money/api.spec.ts',
  'tests/int/money/mixed.spec.ts',
  'tests/int/data/crm.spec.ts',
  'tests/int/data/expand.spec.ts',
  'tests/int/data/owner-permissions.spec.ts',
  'tests/int/data/integrity.spec.ts',
  'tests/int/data/module-caller.spec.ts',
  'tests/int/audit/time-filters.spec.ts',
  'tests/int/gateway/edge.spec.ts',
  'tests/int/http/problems.spec.ts',
  'tests/int/eventstore/idempotency.spec.ts',
  'tests/int/observability/metrics.spec.ts',
  'tests/int/files/uploads.spec.ts',
  'tests/int/files/scanner-outage.spec.ts',
  'tests/int/files/presign.spec.ts',
  'tests/int/files/lifecycle.spec.ts',
  'tests/int/files/images.spec.ts',
  'tests/int/files/large.spec.ts',
  'tests/int/events/api.spec.ts',
  'tests/int/billing/gateway.spec.ts',
  'tests/int/billing/escalation.spec.ts',
  'tests/int/lifecycle/whole-life.spec.ts',
  'tests/int/billing/gateways.spec.ts',
  'tests/int/billing/usage.spec.ts',
  'tests/int/billing/metering.spec.ts',
  'tests/int/billing/gaming.spec.ts',
  'tests/int/billing/suspended.spec.ts',
  'tests/int/security/outbound.spec.ts',
  'tests/int/files/local-upload.spec.ts',
  'tests/int/http/malformed-bodies.spec.ts',
  'tests/int/gateway/contract.spec.ts',
  'tests/int/events/platform-envelope.spec.ts',
  'tests/int/http/shutdown.spec.ts',
];

// role processes and the split run's ClickHouse endpoint start from a bundle built once per run
const TEST_PROGRAMS = 'tests/support/test-programs.ts';
// one migrated database per run, copied for each test file's own
const TEMPLATE_DATABASE = 'tests/support/template-database.ts';

// Suites: unit (pure, fast), int (real engines started by scripts/test-infra.sh), split (SPLIT_SUITES again,
// against the split roles), serial (tests that stop shared servers, one file at a time), e2e (the program as
// an operator runs it).
export default defineConfig({
  test: {
    maxWorkers: 2,
    projects: [
      { test: { name: 'unit', include: ['tests/unit/**/*.spec.ts'], environment: 'node' } },
      {
        test: {
          name: 'int',
          include: ['tests/int/**/*.spec.ts'],
          globalSetup: [TEST_PROGRAMS, TEMPLATE_DATABASE],
          environment: 'node',
          testTimeout: 120_000,
          hookTimeout: 120_000,
          pool: 'forks',
        },
      },
      {
        // the same files as in int, with the test-platform factories starting separate role processes
        test: {
          name: 'split',
          include: SPLIT_SUITES,
          globalSetup: [TEST_PROGRAMS, TEMPLATE_DATABASE],
          environment: 'node',
          env: { PLATFORM_TEST_TOPOLOGY: 'split' },
          testTimeout: 180_000,
          hookTimeout: 180_000,
          pool: 'forks',
        },
      },
      {
        // tests that stop or restart a shared server (Kafka, Redis): one file at a time, after int
        test: {
          name: 'serial',
          include: ['tests/serial/**/*.spec.ts'],
          globalSetup: ['tests/serial/kafka-cleanup.ts', TEST_PROGRAMS, TEMPLATE_DATABASE],
          environment: 'node',
          testTimeout: 240_000,
          hookTimeout: 120_000,
          pool: 'forks',
          poolOptions: { forks: { singleFork: true } },
        },
      },
      {
        test: {
          name: 'e2e',
          include: ['tests/e2e/**/*.spec.ts'],
          environment: 'node',
          testTimeout: 180_000,
          hookTimeout: 180_000,
          pool: 'forks',
        },
      },
    ],
  },
});
