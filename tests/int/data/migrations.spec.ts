import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forceModuleVersion } from '../../../commands/modules/lifecycle';
import { loadModels } from '../../../projections/data/queries';
import { PLATFORM_TENANT_ID } from '../../../domain/identity/constants';
import type { Manifest } from '../../../domain/modules/manifest';
import { rebuildModelTable } from '../../../commands/data/rebuild';
import { testToken } from '../../support/auth';
import { crmManifest, dataServices } from '../../support/data';
import type { ApiClient } from '../../support/events';
import { apiClient } from '../../support/events';
import type { TestPlatform } from '../../support/platform';
import { startTestPlatform } from '../../support/platform';

const TENANT = 'tenant-mig-a';
const CRM = [
  'crm.contacts.read',
  'crm.contacts.write',
  'crm.contacts.delete',
  'crm.notes.read',
  'crm.notes.write',
  'crm.notes.delete',
];

const manifestOf = (slug: string, version: string, sqls: string[], models: Manifest['models'] = []): Manifest => ({
  slug,
  version,
  events: { publishes: [], subscribes: [] },
  models,
  migrations: sqls.map((sql, i) => ({ version: i + 1, name: `m${i + 1}`, sql })),
});

describe('module migrations: the tenant_id rule, failures and recovery, one run under concurrency, permission reconciliation, the log', () => {
  let p: TestPlatform;
  let owner: ApiClient;
  let user: ApiClient;

  beforeAll(async () => {
    p = await startTestPlatform({ services: dataServices });
    owner = apiClient(p.url, testToken(PLATFORM_TENANT_ID, 'platform-owner', ['platform.*']));
    user = apiClient(p.url, testToken(TENANT, 'user-a', CRM));
  }, 60_000);
  afterAll(async () => p?.close());

  it('refuses a migration that creates a table without tenant_id: status error with migrationError, nothing of it kept', async () => {
    expect(
      (
        await owner.call(
          'POST',
          '/modules',
          manifestOf('bare', '1.0.0', [
            'CREATE TABLE ok (tenant_id text, id uuid PRIMARY KEY)',
            'CREATE TABLE loose (id uuid PRIMARY KEY)',
          ]),
        )
      ).status,
    ).toBe(201);
    const install = await owner.call('POST', '/modules/bare/installations', { tenantId: TENANT });
    expect(install.status).toBe(422);
    expect(install.body.type).toMatch(/migration-failed$/);
    expect(install.body.migrationError).toMatch(/module_bare\.loose has no tenant_id/);
    const shown = await owner.call('GET', '/modules/bare');
    expect(shown.body).toMatchObject({ status: 'error', schemaVersion: 1 });
    expect(shown.body.migrationError).toMatch(/migration 2/);
    const tables = (
      await p.kernel.db.query(
        `SELECT table_name FROM information_schema.tables WHERE table_schema = 'module_bare' ORDER BY 1`,
      )
    ).rows;
    expect(tables).toEqual([{ table_name: 'ok' }]);
    // a retry alone fails the same way; force-version declares the schema repaired and clears the error
    expect((await owner.call('POST', '/modules/bare/retry')).body.status).toBe('error');
    const forced = await forceModuleVersion(p.kernel, 'bare', 2);
    expect(forced).toMatchObject({ status: 'registered', schemaVersion: 2, migrationError: null });
  });

  it("refuses a migration whose foreign key leaves the module's schema (it could not be checked within the tenant)", async () => {
    const sqls = [
      'CREATE TABLE mine (tenant_id text NOT NULL, id uuid PRIMARY KEY)',
      'CREATE TABLE pins (tenant_id text NOT NULL, id uuid PRIMARY KEY, key_id uuid REFERENCES modules.keys (id))',
    ];
    expect((await owner.call('POST', '/modules', manifestOf('reacher', '1.0.0', sqls))).status).toBe(201);
    const install = await owner.call('POST', '/modules/reacher/installations', { tenantId: TENANT });
    expect(install.status, JSON.stringify(install.body)).toBe(422);
    expect(install.body.migrationError).toMatch(/references a table outside module_reacher/);
    const tables = await p.kernel.db.query(
      `SELECT table_name FROM information_schema.tables WHERE table_schema = 'module_reacher' ORDER BY 1`,
    );
    expect(tables.rows).toEqual([{ table_name: 'mine' }]);
  });

  it('runs each migration once when two installs race (the second waits for the lock and finds the work done)', async () => {
    const sqls = [
      `CREATE TABLE runs (tenant_id text NOT NULL, n int NOT NULL); INSERT INTO runs VALUES ('x', 1); SELECT pg_sleep(0.2)`,
      `INSERT INTO runs VALUES ('x', 2)`,
    ];
    expect((await owner.call('POST', '/modules', manifestOf('racing', '1.0.0', sqls))).status).toBe(201);
    const answers = await Promise.all(
      ['t1', 't2', 't3'].map((tenantId) => owner.call('POST', '/modules/racing/installations', { tenantId })),
    );
    expect(answers.map((r) => r.status)).toEqual([201, 201, 201]);
    expect((await p.kernel.db.query('SELECT n FROM module_racing.runs ORDER BY n')).rows).toEqual([{ n: 1 }, { n: 2 }]);
  });

  it('a third migration that fails leaves status error (data not served, earlier migrations kept); a fixed version recovers', async () => {
    const crm = await crmManifest();
    expect((await owner.call('POST', '/modules', crm)).status).toBe(201);
    expect((await owner.call('POST', '/modules/crm/installations', { tenantId: TENANT })).status).toBe(201);
    const ada = (await user.call('POST', '/data/crm/contacts', { name: 'Ada' })).body.id as string;

    const broken = {
      ...crm,
      version: '1.1.0',
      migrations: [
        ...crm.migrations,
        {
          version: 3,
          name: 'phone',
          sql: 'ALTER TABLE contacts ADD COLUMN phone text; ALTER TABLE nowhere ADD COLUMN x int',
        },
      ],
    };
    const patched = await owner.call('PATCH', '/modules/crm', broken);
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ status: 'error', version: '1.1.0', schemaVersion: 2 });
    expect(patched.body.migrationError).toMatch(/migration 3 \(phone\).*nowhere/);
    const unavailable = await user.call('GET', `/data/crm/contacts/${ada}`);
    expect(unavailable.status).toBe(503);
    expect(unavailable.body.migrationError).toMatch(/nowhere/);
    expect((await p.kernel.db.query('SELECT count(*)::int AS n FROM module_crm.contacts')).rows[0].n).toBe(1);

    const changedApplied = {
      ...crm,
      version: '1.1.1',
      migrations: [{ ...crm.migrations[0]!, sql: 'SELECT 1' }, ...crm.migrations.slice(1)],
    };
    expect((await owner.call('PATCH', '/modules/crm', changedApplied)).status).toBe(400);
    expect((await owner.call('PATCH', '/modules/crm', { ...crm, version: '1.0.5' })).status).toBe(409);

    const fixed = {
      ...crm,
      version: '1.2.0',
      migrations: [
        ...crm.migrations,
        {
          version: 3,
          name: 'phone',
          sql: 'ALTER TABLE contacts ADD COLUMN phone text; ALTER TABLE contacts ADD COLUMN attributes jsonb',
        },
      ],
    };
    const recovered = await owner.call('PATCH', '/modules/crm', fixed);
    expect(recovered.body).toMatchObject({
      status: 'registered',
      version: '1.2.0',
      schemaVersion: 3,
      migrationError: null,
    });
    const withPhone = await user.call('PATCH', `/data/crm/contacts/${ada}`, {
      phone: '+33 1 23 45 67 89',
      attributes: { vip: true },
    });
    expect(withPhone.status).toBe(200);
    expect(withPhone.body).toMatchObject({
      id: ada,
      name: 'Ada',
      phone: '+33 1 23 45 67 89',
      attributes: { vip: true },
    });
    const huge = await user.call('PATCH', `/data/crm/contacts/${ada}`, {
      attributes: { blob: 'x'.repeat(300 * 1024) },
    });
    expect(huge.status).toBe(400);
    expect(huge.body.errors[0].field).toBe('attributes');
  });

  it('a generated create is an event on platform.data.events, and the table rebuilt from the log has the same rows', async () => {
    const created = await user.call('POST', '/data/crm/contacts', { name: 'Bob', email: 'bob@example.com' });
    await user.call('PATCH', `/data/crm/contacts/${created.body.id}`, { name: 'Robert' });
    const gone = (await user.call('POST', '/data/crm/contacts', { name: 'Gone' })).body.id as string;
    await user.call('DELETE', `/data/crm/contacts/${gone}`);

    const stored = (
      await p.kernel.db.query<{ data: { after: unknown; before: unknown } }>(
        `SELECT data FROM es.events WHERE type = 'data.crm.contacts.created' AND data->>'id' = $1`,
        [created.body.id],
      )
    ).rows;
    expect(stored[0]!.data).toMatchObject({ before: null, after: { name: 'Bob', email: 'bob@example.com' } });
    const onTopic = async () => {
      const partitions = await p.kernel.log.partitionsOf('platform.data.events').catch(() => 0);
      for (let part = 0; part < partitions; part += 1) {
        const records = await p.kernel.log.read('platform.data.events', part, 0, 1000);
        if (
          records.some(
            (r) => String(r.value).includes(created.body.id) && String(r.value).includes('data.crm.contacts.created'),
          )
        )
          return true;
      }
      return false;
    };
    await expect.poll(onTopic, { timeout: 15_000, interval: 200 }).toBe(true);

    const rows = async () => (await p.kernel.db.query('SELECT * FROM module_crm.contacts ORDER BY id')).rows;
    const before = await rows();
    const contacts = (await loadModels(p.kernel.db, 'crm', { models: [{ name: 'contacts', autoApi: true }] }))[0]!;
    await p.kernel.db.query('UPDATE module_crm.contacts SET name = $1', ['vandalised']);
    expect(await rebuildModelTable(p.kernel, 'crm', contacts)).toBeGreaterThan(0);
    expect(await rows()).toEqual(before);
  });

  it('removing a model archives its permissions: a role that still holds them is denied', async () => {
    const noteReader = apiClient(p.url, testToken(TENANT, 'note-reader', ['crm.notes.read']));
    expect((await noteReader.call('GET', '/data/crm/models')).status).toBe(200);
    const crm = await crmManifest();
    const current = (await owner.call('GET', '/modules/crm')).body.manifest as Manifest;
    const withoutNotes = {
      ...crm,
      version: '2.0.0',
      models: crm.models.filter((m) => m.name !== 'notes'),
      migrations: [...current.migrations, { version: 4, name: 'drop_notes', sql: 'DROP TABLE notes' }],
    };
    const res = await owner.call('PATCH', '/modules/crm', withoutNotes);
    expect(res.body).toMatchObject({ status: 'registered', schemaVersion: 4 });
    const statuses = (
      await p.kernel.db.query(`SELECT key, status FROM modules.permissions WHERE key LIKE 'crm.%' ORDER BY key`)
    ).rows;
    expect(statuses).toEqual([
      { key: 'crm.contacts.delete', status: 'active' },
      { key: 'crm.contacts.read', status: 'active' },
      { key: 'crm.contacts.write', status: 'active' },
      { key: 'crm.notes.delete', status: 'archived' },
      { key: 'crm.notes.read', status: 'archived' },
      { key: 'crm.notes.write', status: 'archived' },
    ]);
    expect(p.kernel.permissions.has('crm.notes.read')).toBe(false);
    expect(p.kernel.permissions.has('crm.contacts.read')).toBe(true);
    expect((await noteReader.call('GET', '/data/crm/models')).status).toBe(403);
    expect((await noteReader.call('GET', '/data/crm/notes')).status).toBe(404);
  });

  it('soft delete stops serving the module and keeps its schema', async () => {
    expect((await owner.call('DELETE', '/modules/crm')).status).toBe(204);
    expect((await owner.call('GET', '/modules/crm')).body.status).toBe('deleted');
    const res = await user.call('GET', '/data/crm/contacts');
    expect(res.status).toBe(404);
    expect(res.body.type).toMatch(/module-not-found$/);
    expect((await p.kernel.db.query('SELECT count(*)::int AS n FROM module_crm.contacts')).rows[0].n).toBeGreaterThan(
      0,
    );
  });
});
