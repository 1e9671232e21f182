import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../infra/config';
import type { Role } from '../../../app/platform';
import { asyncProjectionsOfWorkers, roleConfigProblems } from '../../../app/role-config';

const projections = [
  { name: 'tally.counters', mode: 'inline' as const },
  { name: 'tally.totals', mode: 'async' as const },
];
const complete = {
  PLATFORM_ENV: 'production',
  DATABASE_URL: 'postgres://u:p@db:5432/platform',
  ROOT_URL: 'https://api.example.com',
  PLATFORM_SECRET_KEY: randomBytes(32).toString('base64'),
};
const problems = (role: Role, env: Record<string, string>, projection?: string) =>
  roleConfigProblems({ role, projection, projections, config: loadConfig(env) }).map((p) => p.split(':')[0]);
const loadProblems = (env: Record<string, string>) => {
  try {
    loadConfig(env);
    return [];
  } catch (error) {
    return (error as ConfigError).problems;
  }
};

describe('the configuration a role needs', () => {
  it('is nothing beyond the defaults for `platform start`', () => {
    expect(problems('all', { PLATFORM_ENV: 'production' })).toEqual([]);
  });

  it('is one database, one ROOT_URL and one secret for every serve role', () => {
    for (const role of ['gateway', 'write-api', 'read-api', 'workers'] as const) {
      expect(problems(role, complete)).toEqual([]);
      expect(problems(role, { PLATFORM_ENV: 'production' })).toEqual([
        'DATABASE_URL',
        'ROOT_URL',
        'PLATFORM_SECRET_KEY',
      ]);
    }
  });

  it('lets tests share the secret generated into DATA_DIR, but never the issuer', () => {
    expect(problems('gateway', { ...complete, PLATFORM_ENV: 'test', PLATFORM_SECRET_KEY: '' })).toEqual([]);
    expect(problems('gateway', { ...complete, PLATFORM_ENV: 'test', ROOT_URL: '' })).toEqual(['ROOT_URL']);
  });

  it('is, for a projector, the name of an async projection', () => {
    expect(problems('projector', complete, 'tally.totals')).toEqual([]);
    expect(
      roleConfigProblems({
        role: 'projector',
        projection: 'tally.counters',
        projections,
        config: loadConfig(complete),
      }),
    ).toEqual([
      'projection "tally.counters": inline (kept in each command\'s transaction), not run by a projector; name one of its async projections: tally.totals',
    ]);
    expect(
      roleConfigProblems({ role: 'projector', projection: 'audit', projections: [], config: loadConfig(complete) })[0],
    ).toMatch(/^projection "audit": no such projection; this platform has no async projection/);
  });
});

describe('projections left to their projectors (DEDICATED_PROJECTIONS)', () => {
  const more = [...projections, { name: 'tally.audit', mode: 'async' as const }];

  it('are left out of what the workers role and `platform start` run, and only those', () => {
    expect(asyncProjectionsOfWorkers(more, [])).toEqual(['tally.totals', 'tally.audit']);
    expect(asyncProjectionsOfWorkers(more, ['tally.totals'])).toEqual(['tally.audit']);
    expect(asyncProjectionsOfWorkers(more, ['tally.totals', 'tally.audit'])).toEqual([]);
  });

  it('must each name an async projection, in every role, or it would run nowhere', () => {
    for (const role of ['all', 'workers', 'projector'] as const) {
      const config = loadConfig({ ...complete, DEDICATED_PROJECTIONS: 'tally.totals,tally.counters,nope' });
      expect(roleConfigProblems({ role, projection: 'tally.totals', projections, config })).toEqual([
        'DEDICATED_PROJECTIONS: "tally.counters", "nope" are not an async projection of this platform; name some of: tally.totals',
      ]);
    }
    expect(problems('workers', { ...complete, DEDICATED_PROJECTIONS: 'tally.totals' })).toEqual([]);
  });

  it('is a comma-separated list of names', () => {
    expect(loadConfig({ DEDICATED_PROJECTIONS: 'a.b,c.d' }).DEDICATED_PROJECTIONS).toEqual(['a.b', 'c.d']);
    expect(loadProblems({ DEDICATED_PROJECTIONS: 'a.b, c.d' })[0]).toMatch(/^DEDICATED_PROJECTIONS: .*comma-separated/);
  });
});

describe("a gateway in front of write-api: billing's gRPC", () => {
  const split = { ...complete, WRITE_API_URL: 'http://write-api:8080', READ_API_URL: 'http://read-api:8080' };
  const tls = { GRPC_TLS_CERT: '/c.crt', GRPC_TLS_KEY: '/c.key', GRPC_TLS_CA: '/ca.crt' };

  it('is refused without mutual TLS when write-api runs on another host: nothing there would answer', () => {
    expect(problems('gateway', split)).toEqual(['GRPC_TLS_CERT']);
    expect(problems('gateway', { ...split, BILLING_GRPC_TARGET: 'billing.internal:50051' })).toEqual(['GRPC_TLS_CERT']);
    expect(roleConfigProblems({ role: 'gateway', projections, config: loadConfig(split) })[0]).toMatch(
      /asks billing at write-api:50051, which serves gRPC beyond loopback only with mutual TLS/,
    );
  });

  it('is accepted with mutual TLS, on loopback, or with billing disabled', () => {
    expect(problems('gateway', { ...split, ...tls })).toEqual([]);
    expect(problems('gateway', { ...split, BILLING_GRPC_TARGET: '127.0.0.1:50051' })).toEqual([]);
    expect(problems('gateway', { ...split, WRITE_API_URL: 'http://localhost:8081' })).toEqual([]);
    expect(problems('gateway', { ...split, BILLING_ENABLED: 'false' })).toEqual([]);
    // only the gateway dials billing; write-api serving it beyond loopback is checked with the rest of the configuration
    expect(problems('write-api', split)).toEqual([]);
  });
});

describe('a platform with audit views (ClickHouse projections)', () => {
  const withViews = [...projections, { name: 'audit.views', mode: 'async' as const, target: 'clickhouse' as const }];
  const problemsOf = (role: Role, env: Record<string, string>, projection?: string) =>
    roleConfigProblems({ role, projection, projections: withViews, config: loadConfig(env) });

  it('needs CLICKHOUSE_URL for every serve role, a projector of another projection too: chdb is one process’s', () => {
    for (const [role, projection] of [
      ['gateway'],
      ['write-api'],
      ['read-api'],
      ['workers'],
      ['projector', 'tally.totals'],
      ['projector', 'audit.views'],
    ] as const) {
      const found = problemsOf(role, complete, projection);
      expect(found, role).toHaveLength(1);
      expect(found[0]).toMatch(
        new RegExp(
          `^CLICKHOUSE_URL: required by \`platform serve ${role}\`; .*chdb.*such as http://user:password@clickhouse:8123/platform$`,
        ),
      );
      expect(problemsOf(role, { ...complete, CLICKHOUSE_URL: 'http://ch:8123/platform' }, projection)).toEqual([]);
    }
  });

  it('needs nothing for `platform start`, which owns its embedded store', () => {
    expect(problemsOf('all', { PLATFORM_ENV: 'production' })).toEqual([]);
  });
});

describe('a malformed variable', () => {
  it('is one line naming it and what it expects', () => {
    expect(loadProblems({ PORT: 'eighty', LOG_LEVEL: 'loud', KAFKA_BROKERS: 'kafka' })).toEqual([
      'PORT: expected a whole number ≥ 0 (got "eighty")',
      'LOG_LEVEL: expected one of fatal, error, warn, info, debug, trace, silent (got "loud")',
      'KAFKA_BROKERS: expected a comma-separated list of host:port, such as kafka:9092 (got "kafka")',
    ]);
  });

  it('never repeats a value that may hold a credential', () => {
    expect(
      loadProblems({ DATABASE_URL: 'mysql://u:hunter2@db/x', REDIS_URL: 'hunter2', PLATFORM_SECRET_KEY: 'hunter2' }),
    ).toEqual([
      'DATABASE_URL: expected a postgres:// URL such as postgres://user:password@host:5432/platform',
      'REDIS_URL: expected a URL such as redis://valkey:6379',
      'PLATFORM_SECRET_KEY: expected base64 of at least 32 random bytes (openssl rand -base64 32)',
    ]);
  });
});
