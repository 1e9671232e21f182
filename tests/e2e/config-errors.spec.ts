import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/process';

/**
 * A role started with a configuration it cannot run with says, on stderr, one line per problem
 * that names the variable and what to set it to, and exits non-zero before contacting any engine.
 */
const dataDir = mkdtempSync(join(tmpdir(), 'platform-config-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

// a complete split-role environment; the database is never reached because start-up stops first
const complete = {
  PLATFORM_ENV: 'production',
  LOG_LEVEL: 'info',
  PORT: '0',
  DATA_DIR: dataDir,
  DATABASE_URL: 'postgres://platform:platform@127.0.0.1:1/platform',
  ROOT_URL: 'https://api.example.com',
  PLATFORM_SECRET_KEY: randomBytes(32).toString('base64'),
  CLICKHOUSE_URL: 'http://platform:hunter2@127.0.0.1:1/platform',
};
const without = (name: keyof typeof complete) =>
  Object.fromEntries(Object.entries(complete).filter(([k]) => k !== name));
const MALFORMED_DATABASE_URL = 'postgres//platform:hunter2@db/platform';

const cases = [
  {
    broken: 'PLATFORM_SECRET_KEY',
    env: without('PLATFORM_SECRET_KEY'),
    says: /^PLATFORM_SECRET_KEY: required by .*openssl rand -base64 32/,
  },
  {
    broken: 'ROOT_URL',
    env: without('ROOT_URL'),
    says: /^ROOT_URL: required by .*set it to the public URL of the gateway/,
  },
  {
    broken: 'DATABASE_URL',
    env: { ...complete, DATABASE_URL: MALFORMED_DATABASE_URL },
    says: /^DATABASE_URL: expected a postgres:\/\/ URL such as postgres:\/\/user:password@host:5432\/platform$/,
  },
  {
    // the audit store: chdb is one process's, so roles started apart on the embedded one crashed on its lock or each wrote its own
    broken: 'CLICKHOUSE_URL',
    env: without('CLICKHOUSE_URL'),
    says: /^CLICKHOUSE_URL: required by `platform serve [a-z-]+( [a-z.]+)?`; .*chdb.* set it to a ClickHouse server every role uses/,
  },
] as const;

const roles = ['gateway', 'write-api', 'read-api', 'workers', 'projector identity.accounts'].map((role) => ({
  role,
  argv: ['serve', ...role.split(' ')],
}));

const expectOneActionableLine = (
  run: { code: number | null; stdout: string; stderr: string },
  says: RegExp,
  others: RegExp[] = [],
) => {
  const lines = run.stderr.trim().split('\n');
  expect(run.code, run.stderr).not.toBe(0);
  expect(
    lines.filter((l) => says.test(l)),
    run.stderr,
  ).toHaveLength(1);
  expect(
    lines.filter((l) => !says.test(l) && !others.some((o) => o.test(l))),
    'no other line (no stack trace)',
  ).toEqual([]);
  expect(run.stderr).not.toContain('hunter2');
};

describe.each(roles)('platform serve $role', ({ role, argv }) => {
  // the platform has no async projection yet, so the projector also names the projection it cannot run
  const others = role.startsWith('projector')
    ? [/^projection "identity\.accounts": inline .*not run by a projector/]
    : [];
  it.each(cases)(
    'without a usable $broken prints one line naming it and what to do, and exits non-zero',
    async ({ env, says }) => {
      const run = await runCli(argv, env);
      expectOneActionableLine(run, says, others);
      expect(run.code).toBe(2);
    },
  );
});

describe('platform start', () => {
  it('with a malformed DATABASE_URL prints one line naming it and what to do, and exits non-zero', async () => {
    expectOneActionableLine(
      await runCli(['start'], { DATA_DIR: dataDir, PORT: '0', DATABASE_URL: MALFORMED_DATABASE_URL }),
      cases[2].says,
    );
  });
});
