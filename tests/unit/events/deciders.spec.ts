import { describe, expect, it } from 'vitest';
import { parseSchema } from '../../../commands/events/proto';
import { breakingChanges } from '../../../domain/events/compatibility';
import { afterFailure } from '../../../domain/events/delivery';
import { redriveSchedule } from '../../../domain/events/dlq';
import { decideLagAlert } from '../../../domain/events/lag';
import { publishVerdict } from '../../../domain/events/publishing';
import { compareSemver } from '../../../domain/events/semver';
import { Manifest, manifestProblems } from '../../../domain/modules/manifest';

const crm = { kind: 'module' as const, slug: 'crm', publishes: ['crm.contact.created'] };

describe('who may publish what', () => {
  it('a module publishes the types of its manifest only; no one publishes auth., money., billing. through the bus', () => {
    expect(publishVerdict(crm, 'crm.contact.created')).toEqual({ allowed: true });
    expect(publishVerdict(crm, 'crm.contact.deleted').allowed).toBe(false);
    for (const type of ['auth.user.created', 'money.wallet.credited', 'billing.plan.changed']) {
      expect(publishVerdict({ kind: 'module', slug: 'x', publishes: [type] }, type).allowed).toBe(false);
      expect(publishVerdict({ kind: 'app' }, type).allowed).toBe(false);
    }
  });
  it("a user's token publishes app.* only", () => {
    expect(publishVerdict({ kind: 'app' }, 'app.order.placed')).toEqual({ allowed: true });
    expect(publishVerdict({ kind: 'app' }, 'crm.contact.created').allowed).toBe(false);
  });
});

describe('manifests', () => {
  it("refuse a type outside the module's own domain, a platform slug, and subscribes without an endpoint", () => {
    const m = Manifest.parse({
      slug: 'crm',
      version: '1.0.0',
      events: { publishes: ['money.wallet.credited'], subscribes: ['platform.crm.events'] },
    });
    expect(manifestProblems(m).map((p) => p.code)).toEqual(['FOREIGN_DOMAIN', 'REQUIRED']);
    expect(Manifest.safeParse({ slug: 'money', version: '1.0.0' }).success).toBe(false);
  });
});

describe('delivery attempts', () => {
  it('retries twice with a growing wait, then dead-letters on the third failure', () => {
    expect(afterFailure(0, 100)).toEqual({ kind: 'retry', attempts: 1, delayMs: 100 });
    expect(afterFailure(1, 100)).toEqual({ kind: 'retry', attempts: 2, delayMs: 200 });
    expect(afterFailure(2, 100)).toEqual({ kind: 'dead-letter', failureCount: 3 });
  });
});

describe('redrive schedule', () => {
  it('spaces entries at the rate, after what is already scheduled', () => {
    expect(redriveSchedule(3, 1000, null, 50)).toEqual([1000, 1020, 1040]);
    expect(redriveSchedule(2, 1000, 5000, 50)).toEqual([5020, 5040]);
  });
});

describe('lag alerts', () => {
  it('announce each level once; a warning waits during a bulk import, critical does not', () => {
    expect(decideLagAlert(30_000, { notified: null }, false)).toMatchObject({ level: 'ok', notify: null });
    expect(decideLagAlert(90_000, { notified: null }, false)).toMatchObject({
      level: 'info',
      log: 'info',
      notify: null,
      notified: 'info',
    });
    expect(decideLagAlert(6 * 60_000, { notified: 'info' }, false)).toMatchObject({
      level: 'warning',
      notify: 'warning',
    });
    expect(decideLagAlert(6 * 60_000, { notified: 'warning' }, false)).toMatchObject({ notify: null, log: null });
    expect(decideLagAlert(6 * 60_000, { notified: 'info' }, true)).toMatchObject({
      level: 'warning',
      notify: null,
      notified: 'info',
    });
    expect(decideLagAlert(16 * 60_000, { notified: 'info' }, true)).toMatchObject({
      level: 'critical',
      notify: 'critical',
    });
  });
});

describe('schema compatibility', () => {
  const v1 =
    'syntax = "proto3"; package crm; message Contact { string id = 1; string name = 2; repeated string tags = 3; } enum Kind { KIND_UNSPECIFIED = 0; PERSON = 1; }';
  it('accepts added fields, messages and enum values, and a removed field whose number and name are reserved', () => {
    const next =
      'syntax = "proto3"; package crm; message Contact { reserved 2; reserved "name"; string id = 1; repeated string tags = 3; string email = 4; } message Extra { int32 n = 1; } enum Kind { KIND_UNSPECIFIED = 0; PERSON = 1; COMPANY = 2; }';
    expect(breakingChanges(parseSchema(v1), parseSchema(next))).toEqual([]);
  });
  it('refuses type, name, cardinality and enum number changes, removals without reserve, and a new package', () => {
    const next =
      'syntax = "proto3"; package crm2; message Contact { int64 id = 1; string tags = 3; } enum Kind { KIND_UNSPECIFIED = 0; PERSON = 5; }';
    const codes = breakingChanges(parseSchema(v1), parseSchema(next))
      .map((p) => p.code)
      .sort();
    expect(codes).toEqual(expect.arrayContaining(['PACKAGE_CHANGED']));
    const samePackage = next.replace('crm2', 'crm');
    expect(
      breakingChanges(parseSchema(v1), parseSchema(samePackage))
        .map((p) => p.code)
        .sort(),
    ).toEqual(['ENUM_VALUE_NUMBER_CHANGED', 'FIELD_CARDINALITY_CHANGED', 'FIELD_REMOVED', 'FIELD_TYPE_CHANGED']);
  });
  it('refuses a definition that does not parse with 400', () => {
    expect(() => parseSchema('message {')).toThrow();
  });
});

describe('semver precedence', () => {
  it('orders versions as semver 2.0.0 does', () => {
    expect(
      ['1.0.0', '1.0.0-alpha', '1.0.0-alpha.1', '0.9.9', '1.0.0-beta', '1.10.0', '1.2.0'].sort(compareSemver),
    ).toEqual(['0.9.9', '1.0.0-alpha', '1.0.0-alpha.1', '1.0.0-beta', '1.0.0', '1.2.0', '1.10.0']);
  });
});
