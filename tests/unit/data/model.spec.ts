import { describe, expect, it } from 'vitest';
import { gateCaller, gateModel, gateModule, permissionChanges, type ModuleRow } from '../../../domain/data/access';
import type { Model } from '../../../domain/data/catalog';
import { parseListQuery } from '../../../domain/data/query';
import { recordDecider } from '../../../domain/data/record';
import { statementOf } from '../../../commands/data/statements';
import { validateRecord } from '../../../domain/data/validation';
import { Manifest, manifestProblems } from '../../../domain/modules/manifest';
import { moduleDecider } from '../../../domain/modules/registry';
import { fold } from '../../../domain/shared/decider';
import { isDomainError } from '../../../domain/shared/errors';

const col = (name: string, udt: string, o: Partial<Model['columns'][number]> = {}) => ({
  name,
  type: udt,
  udt,
  nullable: true,
  pk: false,
  default: null,
  maxLength: null,
  domain: null,
  ...o,
});
const contacts: Model = {
  name: 'contacts',
  table: 'contacts',
  schema: 'module_crm',
  autoApi: true,
  indexes: [],
  relations: [],
  checks: [],
  columns: [
    col('tenant_id', 'text', { nullable: false }),
    col('id', 'uuid', { nullable: false, pk: true }),
    col('name', 'text', { nullable: false }),
    col('email', 'text'),
    col('meta', 'jsonb'),
    col('age', 'int4'),
  ],
};

const suffixOf = (fn: () => unknown): string => {
  try {
    fn();
  } catch (e) {
    if (isDomainError(e)) return `${e.status} ${e.suffix}`;
    throw e;
  }
  return 'ok';
};

describe('records: validation derived from the columns', () => {
  it('requires NOT NULL columns without a default, refuses unknown fields, tenant_id and id, and wrong types', () => {
    expect(validateRecord(contacts, { name: 'Ada' }, 'create')).toEqual({ name: 'Ada' });
    expect(suffixOf(() => validateRecord(contacts, { email: 'a@b' }, 'create'))).toBe('400 validation-error');
    expect(suffixOf(() => validateRecord(contacts, { name: 'A', x: 1 }, 'create'))).toBe('400 validation-error');
    expect(suffixOf(() => validateRecord(contacts, { name: 'A', tenant_id: 't' }, 'create'))).toBe(
      '400 validation-error',
    );
    expect(suffixOf(() => validateRecord(contacts, { name: 'A', age: 1.5 }, 'create'))).toBe('400 validation-error');
    expect(validateRecord(contacts, { email: null }, 'patch')).toEqual({ email: null });
    expect(suffixOf(() => validateRecord(contacts, {}, 'patch'))).toBe('400 validation-error');
  });

  it('limits a record to 1 MB and a JSON field to 256 KB', () => {
    expect(suffixOf(() => validateRecord(contacts, { name: 'x'.repeat(1024 * 1024) }, 'create'))).toBe(
      '400 validation-error',
    );
    expect(suffixOf(() => validateRecord(contacts, { name: 'A', meta: { s: 'x'.repeat(256 * 1024) } }, 'create'))).toBe(
      '400 validation-error',
    );
    expect(validateRecord(contacts, { name: 'A', meta: { s: 'x'.repeat(1000) } }, 'create')).toHaveProperty('meta');
  });
});

describe('lists: filters, sort, expand', () => {
  it('parses filters with operators and checks values against the column type', () => {
    const q = parseListQuery(contacts, { 'name[like]': 'A%', age: '3', page_size: 20 });
    expect(q.filters.map((f) => [f.column.name, f.op, f.value])).toEqual([
      ['name', 'like', 'A%'],
      ['age', 'eq', '3'],
    ]);
    expect(suffixOf(() => parseListQuery(contacts, { age: 'three' }))).toBe('400 validation-error');
    expect(suffixOf(() => parseListQuery(contacts, { tenant_id: 'other' }))).toBe('400 validation-error');
    expect(suffixOf(() => parseListQuery(contacts, { 'name[drop]': 'x' }))).toBe('400 validation-error');
  });

  it('allows 10 filters and refuses 11 (422); refuses expansions deeper than 2 (422) and sorting by an unknown column (400)', () => {
    expect(
      parseListQuery(contacts, { 'name[ne]': Array.from({ length: 9 }, (_, i) => `n${i}`), age: '3' }).filters,
    ).toHaveLength(10);
    expect(
      suffixOf(() => parseListQuery(contacts, { 'name[ne]': Array.from({ length: 11 }, (_, i) => `n${i}`) })),
    ).toBe('422 too-many-filters');
    expect(parseListQuery(contacts, { expand: 'a.b' }).expand).toEqual([['a', 'b']]);
    expect(suffixOf(() => parseListQuery(contacts, { expand: 'a.b.c' }))).toBe('422 relation-too-deep');
    expect(suffixOf(() => parseListQuery(contacts, { sort: 'nope' }))).toBe('400 validation-error');
    expect(parseListQuery(contacts, { sort: 'email' }).sort).toMatchObject({ desc: false, column: { name: 'email' } });
    expect(parseListQuery(contacts, { sort: '-name' }).sort).toMatchObject({ desc: true, column: { name: 'name' } });
  });
});

describe('the record decider and its projection', () => {
  const ref = { module: 'crm', model: 'contacts', id: 'r1' };
  it('given nothing, create records data.crm.contacts.created with after; given it, update carries before and after; delete ends it', () => {
    const created = recordDecider.decide(
      { type: 'CreateRecord', ref, values: { name: 'Ada' } },
      recordDecider.initialState(),
    );
    expect(created).toEqual([
      { type: 'data.crm.contacts.created', data: { ...ref, before: null, after: { name: 'Ada' } } },
    ]);
    const state = fold(recordDecider, created);
    const updated = recordDecider.decide({ type: 'UpdateRecord', ref, changes: { email: 'a@b' } }, state);
    expect(updated[0]!.data).toMatchObject({ before: { name: 'Ada' }, after: { name: 'Ada', email: 'a@b' } });
    const deleted = recordDecider.decide({ type: 'DeleteRecord', ref }, fold(recordDecider, [...created, ...updated]));
    expect(deleted[0]!.type).toBe('data.crm.contacts.deleted');
    expect(
      suffixOf(() =>
        recordDecider.decide({ type: 'UpdateRecord', ref, changes: {} }, fold(recordDecider, [...created, ...deleted])),
      ),
    ).toBe('404 not-found');
  });

  it('projects an event as one statement scoped by tenant, JSON encoded for json columns', () => {
    const s = statementOf(contacts, 't1', {
      type: 'data.crm.contacts.created',
      data: { ...ref, before: null, after: { name: 'Ada', meta: { a: 1 }, gone: 1 } },
    });
    expect(s.text).toContain('INSERT INTO "module_crm"."contacts" ("tenant_id", "id", "name", "meta")');
    expect(s.values).toEqual(['t1', 'r1', 'Ada', '{"a":1}']);
    expect(
      statementOf(contacts, 't1', { type: 'data.crm.contacts.deleted', data: { ...ref, before: {}, after: null } })
        .text,
    ).toContain('WHERE tenant_id = $1 AND id = $2');
  });
});

describe('access to generated models', () => {
  const row = (o: Partial<ModuleRow>): ModuleRow => ({
    id: 'm',
    slug: 'crm',
    status: 'registered',
    version: '1.0.0',
    manifest: Manifest.parse({ slug: 'crm', version: '1.0.0' }),
    updated_at: new Date(0),
    schema_version: 2,
    dirty: false,
    migration_error: null,
    installation: 'active',
    ...o,
  });
  it('a module not installed, inactive or deleted is module-not-found; one in error is 503', () => {
    expect(suffixOf(() => gateModule(null))).toBe('404 module-not-found');
    expect(suffixOf(() => gateModule(row({ installation: 'inactive' })))).toBe('404 module-not-found');
    expect(suffixOf(() => gateModule(row({ status: 'deleted' })))).toBe('404 module-not-found');
    expect(suffixOf(() => gateModule(row({ dirty: true, migration_error: 'boom' })))).toBe('503 service-unavailable');
  });
  it("needs the model's permission; an archived permission is denied though held; autoApi false is never exposed", () => {
    expect(gateModel([contacts], 'crm', 'contacts', 'read', new Set(['crm.contacts.read']), new Set()).name).toBe(
      'contacts',
    );
    expect(gateModel([contacts], 'crm', 'contacts', 'write', new Set(['crm.*']), new Set()).name).toBe('contacts');
    expect(
      suffixOf(() => gateModel([contacts], 'crm', 'contacts', 'write', new Set(['crm.contacts.read']), new Set())),
    ).toBe('403 forbidden');
    expect(
      suffixOf(() =>
        gateModel(
          [contacts],
          'crm',
          'contacts',
          'read',
          new Set(['crm.contacts.read']),
          new Set(['crm.contacts.read']),
        ),
      ),
    ).toBe('403 forbidden');
    expect(
      suffixOf(() =>
        gateModel([{ ...contacts, autoApi: false }], 'crm', 'contacts', 'read', new Set(['crm.*']), new Set()),
      ),
    ).toBe('404 not-found');
  });
});

describe('the registry: manifests and the module decider', () => {
  it('numbers migrations 1, 2, 3 in order, reserves the model name models, keeps permissions in the module', () => {
    const m = Manifest.parse({
      slug: 'crm',
      version: '1.0.0',
      migrations: [{ version: 2, name: 'a', sql: 'x' }],
      models: [{ name: 'models' }],
      permissions: { 'other.x': 'y' },
    });
    expect(
      manifestProblems(m)
        .map((p) => p.code)
        .sort(),
    ).toEqual(['FOREIGN_DOMAIN', 'NOT_SEQUENTIAL', 'RESERVED']);
  });

  it("grants a module's key only its own models' permissions, its own permissions and notify.send", () => {
    const m = Manifest.parse({
      slug: 'crm',
      version: '1.0.0',
      models: [{ name: 'contacts', autoApi: true }, { name: 'audit_trail' }],
      permissions: { 'crm.export': 'export contacts' },
      keyPermissions: [
        'crm.contacts.read',
        'crm.*',
        'crm.export',
        'notify.send',
        'events.publish',
        'crm.audit_trail.read',
        'crm.contacts.purge',
        'stock.items.read',
        'notify.read',
        'money.*',
        'roles.assign',
        'crm.contacts.read',
      ],
    });
    expect(manifestProblems(m).map((p) => `${p.field} ${p.code}`)).toEqual([
      'keyPermissions.5 UNKNOWN_PERMISSION',
      'keyPermissions.6 UNKNOWN_PERMISSION',
      'keyPermissions.7 FOREIGN_MODULE',
      'keyPermissions.8 PLATFORM_PERMISSION',
      'keyPermissions.9 PLATFORM_PERMISSION',
      'keyPermissions.10 PLATFORM_PERMISSION',
      'keyPermissions DUPLICATE',
    ]);
  });

  it("keeps a module's key out of every other module's data (404, as if not installed); people pass", () => {
    expect(suffixOf(() => gateCaller({ source: 'crm' }, 'stock'))).toBe('404 module-not-found');
    expect(() => gateCaller({ source: 'crm' }, 'crm')).not.toThrow();
    expect(() => gateCaller({}, 'stock')).not.toThrow();
  });

  it('installs, deactivates and activates per tenant; a new version must be greater; purge needs a deletion first', () => {
    const at = '2026-01-01T00:00:00Z';
    const registered = moduleDecider.decide(
      {
        type: 'RegisterModule',
        data: {
          moduleId: 'm',
          slug: 'crm',
          version: '1.0.0',
          manifest: Manifest.parse({ slug: 'crm', version: '1.0.0' }),
          registeredBy: 'o',
          registeredAt: at,
        },
      },
      moduleDecider.initialState(),
    );
    let s = fold(moduleDecider, registered);
    const act = { moduleId: 'm', slug: 'crm', tenantId: 't', version: '1.0.0', schemaVersion: 2, installed: false, at };
    expect(suffixOf(() => moduleDecider.decide({ type: 'ActivateModule', data: act }, s))).toBe('404 module-not-found');
    s = fold(moduleDecider, moduleDecider.decide({ type: 'ActivateModule', data: { ...act, installed: true } }, s), s);
    expect(moduleDecider.decide({ type: 'ActivateModule', data: act }, s)).toEqual([]);
    expect(
      moduleDecider.decide({ type: 'DeactivateModule', data: { moduleId: 'm', slug: 'crm', tenantId: 't', at } }, s)[0]!
        .type,
    ).toBe('module.registry.deactivated');
    const update = {
      moduleId: 'm',
      slug: 'crm',
      version: '1.0.0',
      previousVersion: '1.0.0',
      manifest: Manifest.parse({ slug: 'crm', version: '1.0.0' }),
      updatedBy: 'o',
      updatedAt: at,
    };
    expect(suffixOf(() => moduleDecider.decide({ type: 'UpdateModule', data: update }, s))).toBe('409 conflict');
    expect(
      suffixOf(() =>
        moduleDecider.decide({ type: 'PurgeModule', data: { moduleId: 'm', slug: 'crm', purgedBy: 'o', at } }, s),
      ),
    ).toBe('409 conflict');
  });
});

describe("a module's permissions after a reconciliation", () => {
  const stored = [
    { key: 'crm.contacts.read', description: 'read crm contacts', status: 'active' as const },
    { key: 'crm.notes.read', description: 'read crm notes', status: 'active' as const },
    { key: 'crm.old.read', description: 'read crm old', status: 'archived' as const },
  ];

  it('names the keys that became active or changed description, and those archived', () => {
    expect(
      permissionChanges(stored, {
        'crm.contacts.read': 'read crm contacts',
        'crm.notes.read': 'read the notes',
        'crm.old.read': 'read crm old',
        'crm.tags.read': 'read crm tags',
      }),
    ).toEqual({ registered: ['crm.notes.read', 'crm.old.read', 'crm.tags.read'], archived: [] });
    expect(permissionChanges(stored, { 'crm.contacts.read': 'read crm contacts' })).toEqual({
      registered: [],
      archived: ['crm.notes.read'],
    });
  });

  it('is recorded as an event only when something changed, and only for a known module', () => {
    const at = '2026-01-01T00:00:00Z';
    const s = fold(
      moduleDecider,
      moduleDecider.decide(
        {
          type: 'RegisterModule',
          data: {
            moduleId: 'm',
            slug: 'crm',
            version: '1.0.0',
            manifest: Manifest.parse({ slug: 'crm', version: '1.0.0' }),
            registeredBy: 'o',
            registeredAt: at,
          },
        },
        moduleDecider.initialState(),
      ),
    );
    const changed = { moduleId: 'm', slug: 'crm', registered: ['crm.tags.read'], archived: [], at };
    expect(moduleDecider.decide({ type: 'RecordPermissionsChanged', data: changed }, s)).toEqual([
      { type: 'module.registry.permissions_changed', data: changed },
    ]);
    expect(moduleDecider.decide({ type: 'RecordPermissionsChanged', data: { ...changed, registered: [] } }, s)).toEqual(
      [],
    );
    expect(
      suffixOf(() =>
        moduleDecider.decide({ type: 'RecordPermissionsChanged', data: changed }, moduleDecider.initialState()),
      ),
    ).toBe('404 module-not-found');
  });
});
