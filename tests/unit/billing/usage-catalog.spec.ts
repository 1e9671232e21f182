import { describe, expect, it } from 'vitest';
import { usageEffectOf, USAGE_EVENT_TYPES, usageTenantOf } from '../../../domain/billing/usage';
import { recordEventType } from '../../../domain/data/record';
import { fileEventTypes } from '../../../domain/files/events';
import { MembershipEvent } from '../../../domain/identity/membership';
import { moduleEventTypes } from '../../../domain/modules/events';
import { typeMatches } from '../../../domain/shared/event';
import { USAGE_EVENTS } from '../../../domain/shared/usage-events';

/**
 * One catalog of the events billing meters (domain/shared/usage-events.ts): every type billing
 * consumes is one a producer's event union declares (identity's memberships, files, the module
 * registry) or one the data layer makes for its generated models — so a renamed event fails here
 * instead of silently stopping a count (as data.record.created once did: no producer ever made it).
 */
const PRODUCED: readonly string[] = [
  ...MembershipEvent.options.map((o) => o.shape.type.value),
  ...fileEventTypes,
  ...moduleEventTypes,
  recordEventType('crm', 'contacts', 'created'),
  recordEventType('crm', 'contacts', 'updated'),
  recordEventType('crm', 'contacts', 'deleted'),
];

describe('the usage event catalog', () => {
  it('given every type billing consumes, then some producer produces it', () => {
    expect([...USAGE_EVENT_TYPES].sort()).toEqual(Object.values(USAGE_EVENTS).sort());
    for (const consumed of USAGE_EVENT_TYPES)
      expect(
        PRODUCED.some((produced) => typeMatches(consumed, produced)),
        `${consumed} is produced by no service`,
      ).toBe(true);
  });

  it('given a generated record, then its creation counts one record and its deletion uncounts it; an update is no usage', () => {
    const data = { module: 'crm', model: 'contacts', id: 'r1', before: null, after: {} };
    expect(usageEffectOf(recordEventType('crm', 'contacts', 'created'), data)).toEqual({
      resource: 'records',
      itemId: 'crm.contacts.r1',
      amount: 1,
      counted: true,
    });
    expect(usageEffectOf(recordEventType('crm', 'contacts', 'deleted'), data)).toMatchObject({ counted: false });
    expect(usageEffectOf(recordEventType('crm', 'contacts', 'updated'), data)).toBeNull();
    expect(usageEffectOf('data.record.created', { recordId: 'r1' })).toBeNull();
  });

  it("given a module's activation in the platform's stream, then it is booked to the installing tenant", () => {
    const data = { moduleId: 'm1', slug: 'crm', tenantId: 't1', version: '1.0.0', schemaVersion: 1, installed: true };
    expect(usageEffectOf('module.registry.activated', data)).toMatchObject({ resource: 'modules', tenantId: 't1' });
    expect(usageTenantOf('module.registry.activated', 'platform', data)).toBe('t1');
    expect(usageTenantOf('auth.member.added', 't2', { userId: 'u1' })).toBe('t2');
  });

  it('given a pattern, then a * matches exactly one segment', () => {
    expect(typeMatches('data.*.*.created', 'data.crm.contacts.created')).toBe(true);
    expect(typeMatches('data.*.*.created', 'data.crm.created')).toBe(false);
    expect(typeMatches('data.*.*.created', 'data.crm.contacts.updated')).toBe(false);
    expect(typeMatches('auth.member.added', 'auth.member.added')).toBe(true);
  });
});
