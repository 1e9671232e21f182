import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PLATFORM_TENANT_ID } from '../../../domain/identity/constants';
import { testToken } from '../../support/auth';
import { crmManifest } from '../../support/data';
import type { ApiClient } from '../../support/events';
import { apiClient } from '../../support/events';
import type { TestPlatform } from '../../support/platform';
import { startTestPlatform } from '../../support/platform';

const TENANT_A = 'tenant-crm-a';
const TENANT_B = 'tenant-crm-b';
const CRM = [
  'crm.contacts.read',
  'crm.contacts.write',
  'crm.contacts.delete',
  'crm.notes.read',
  'crm.notes.write',
  'crm.notes.delete',
];

describe('the sample module crm: registry, generated CRUD, introspection, tenant isolation', () => {
  let p: TestPlatform;
  let owner: ApiClient;
  let a: ApiClient;
  let b: ApiClient;

  beforeAll(async () => {
    p = await startTestPlatform({ services: ['data'] });
    owner = apiClient(p.url, testToken(PLATFORM_TENANT_ID, 'platform-owner', ['platform.*']));
    a = apiClient(p.url, testToken(TENANT_A, 'user-a', CRM));
    b = apiClient(p.url, testToken(TENANT_B, 'user-b', CRM));
  });
  afterAll(async () => p?.close());

  it('given the registered module, when a tenant has not installed it, then its data paths answer 404 module-not-found', async () => {
    const registered = await owner.call('POST', '/modules', await crmManifest());
    expect(registered.status).toBe(201);
    const res = await a.call('POST', '/data/crm/contacts', { name: 'Ada' });
    expect(res.status).toBe(404);
    expect(res.body.type).toMatch(/module-not-found$/);
  });

  it('installs for two tenants: both migrations run, the module is active, its events recorded', async () => {
    const [ia, ib] = await Promise.all([
      owner.call('POST', '/modules/crm/installations', { tenantId: TENANT_A }),
      owner.call('POST', '/modules/crm/installations', { tenantId: TENANT_B }),
    ]);
    expect([ia.status, ib.status]).toEqual([201, 201]);
    expect(ia.body).toMatchObject({ slug: 'crm', tenantId: TENANT_A, status: 'active', schemaVersion: 2 });
    const shown = await owner.call('GET', '/modules/crm');
    expect(shown.body).toMatchObject({ status: 'registered', schemaVersion: 2, migrationError: null });
    const types = (
      await p.kernel.db.query<{ type: string }>(
        `SELECT type FROM es.events WHERE type LIKE 'module.registry.%' ORDER BY position`,
      )
    ).rows.map((r) => r.type);
    // the first install's reconciliation registered the permissions; the second found them in place
    expect(types).toEqual([
      'module.registry.registered',
      'module.registry.permissions_changed',
      'module.registry.activated',
      'module.registry.activated',
    ]);
  });

  it('creates, reads, changes and deletes records through the generated endpoints, with their permissions', async () => {
    const created = await a.call('POST', '/data/crm/contacts', { name: 'Ada', email: 'ada@example.com' });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({ id: expect.any(String), name: 'Ada', email: 'ada@example.com' });
    const id = created.body.id as string;
    expect((await a.call('GET', `/data/crm/contacts/${id}`)).body).toEqual(created.body);

    const changed = await a.call('PATCH', `/data/crm/contacts/${id}`, { email: null });
    expect(changed.status).toBe(200);
    expect(changed.body).toEqual({ id, name: 'Ada', email: null });

    const note = await a.call('POST', '/data/crm/notes', { contact_id: id, body: 'met at the conference' });
    expect(note.status).toBe(201);
    const expanded = await a.call('GET', '/data/crm/notes?expand=contact');
    expect(expanded.body.data).toEqual([{ ...note.body, contact: { id, name: 'Ada', email: null } }]);

    expect((await a.call('DELETE', `/data/crm/notes/${note.body.id}`)).status).toBe(204);
    expect((await a.call('GET', `/data/crm/notes/${note.body.id}`)).status).toBe(404);

    const readOnly = apiClient(p.url, testToken(TENANT_A, 'reader', ['crm.contacts.read']));
    expect((await readOnly.call('GET', `/data/crm/contacts/${id}`)).status).toBe(200);
    expect((await readOnly.call('POST', '/data/crm/contacts', { name: 'Eve' })).status).toBe(403);
    expect((await readOnly.call('DELETE', `/data/crm/contacts/${id}`)).status).toBe(403);
  });

  it('refuses invalid bodies with field errors: a required field missing, an unknown field, a wrong type, tenant_id or id in the body', async () => {
    for (const body of [
      { email: 'x@example.com' },
      { name: 'A', nickname: 'x' },
      { name: 42 },
      { name: 'A', tenant_id: TENANT_B },
      { name: 'A', id: '0190a0a0-0000-7000-8000-000000000000' },
    ]) {
      const res = await a.call('POST', '/data/crm/contacts', body);
      expect(res.status).toBe(400);
      expect(res.body.type).toMatch(/validation-error$/);
      expect(res.body.errors.length).toBeGreaterThan(0);
    }
  });

  it('lists with filters, sort and pages', async () => {
    for (const name of ['Bea', 'Cid', 'Dan'])
      expect(
        (await a.call('POST', '/data/crm/contacts', { name, email: `${name.toLowerCase()}@example.com` })).status,
      ).toBe(201);
    const first = await a.call('GET', '/data/crm/contacts?sort=-name&page_size=2');
    expect(first.body.data.map((c: { name: string }) => c.name)).toEqual(['Dan', 'Cid']);
    const second = await a.call(
      'GET',
      `/data/crm/contacts?sort=-name&page_size=2&page_token=${first.body.next_page_token}`,
    );
    expect(second.body.data.map((c: { name: string }) => c.name)).toEqual(['Bea', 'Ada']);
    expect(second.body.next_page_token).toBeUndefined();
    const forged = Buffer.from(JSON.stringify({ v: 'Cid', id: 'not-a-uuid' })).toString('base64url');
    expect((await a.call('GET', `/data/crm/contacts?sort=-name&page_token=${forged}`)).status).toBe(400);
    const filtered = await a.call('GET', '/data/crm/contacts?name[gte]=C&email[like]=%25example.com');
    expect(filtered.body.data.map((c: { name: string }) => c.name).sort()).toEqual(['Cid', 'Dan']);
  });

  it('sorts by a column that may be NULL: NULLs last ascending, first descending, each row once across pages', async () => {
    // given contacts of a tenant of its own, some without an email
    const c = apiClient(p.url, testToken('tenant-crm-sort', 'user-s', CRM));
    const install = await owner.call('POST', '/modules/crm/installations', { tenantId: 'tenant-crm-sort' });
    expect(install.status, JSON.stringify(install.body)).toBe(201);
    const emails = ['c@x.test', null, 'a@x.test', null, 'b@x.test', null];
    for (const [i, email] of emails.entries())
      expect((await c.call('POST', '/data/crm/contacts', { name: `n${i}`, ...(email ? { email } : {}) })).status).toBe(
        201,
      );
    const walk = async (sort: string): Promise<(string | null)[]> => {
      const seen: (string | null)[] = [];
      let token: string | undefined;
      do {
        const page = await c.call(
          'GET',
          `/data/crm/contacts?sort=${sort}&page_size=2${token ? `&page_token=${token}` : ''}`,
        );
        expect(page.status, JSON.stringify(page.body)).toBe(200);
        seen.push(...page.body.data.map((x: { email: string | null }) => x.email ?? null));
        token = page.body.next_page_token;
      } while (token);
      return seen;
    };

    // when it pages through them by email, both ways; then every row comes once, in order
    expect(await walk('email')).toEqual(['a@x.test', 'b@x.test', 'c@x.test', null, null, null]);
    expect(await walk('-email')).toEqual([null, null, null, 'c@x.test', 'b@x.test', 'a@x.test']);
    // a cursor whose value is NULL is refused for a column that is never NULL
    const forged = Buffer.from(JSON.stringify({ v: null, id: '00000000-0000-7000-8000-000000000000' })).toString(
      'base64url',
    );
    expect((await c.call('GET', `/data/crm/contacts?sort=name&page_token=${forged}`)).status).toBe(400);
  });

  it('keeps tenants apart: by list, by guessed id, by writes, and by filters that try to reach tenant_id or inject SQL', async () => {
    const mine = (await a.call('POST', '/data/crm/contacts', { name: 'Secret' })).body.id as string;
    expect((await b.call('GET', `/data/crm/contacts/${mine}`)).status).toBe(404);
    expect((await b.call('PATCH', `/data/crm/contacts/${mine}`, { name: 'Taken' })).status).toBe(404);
    expect((await b.call('DELETE', `/data/crm/contacts/${mine}`)).status).toBe(404);
    expect((await b.call('GET', '/data/crm/contacts')).body.data).toEqual([]);
    expect((await b.call('GET', `/data/crm/contacts?tenant_id=${TENANT_A}`)).status).toBe(400);
    const injected = await b.call('GET', `/data/crm/contacts?name=${encodeURIComponent("x' OR '1'='1")}`);
    expect(injected.status).toBe(200);
    expect(injected.body.data).toEqual([]);
    expect((await b.call('GET', `/data/crm/contacts?name[like]=%25`)).body.data).toEqual([]);
    expect((await a.call('GET', `/data/crm/contacts/${mine}`)).body.name).toBe('Secret');

    // row-level security holds without any tenant filter: the data role as tenant B sees none of A's rows
    const seen = await p.kernel.db.connect();
    try {
      await seen.query('BEGIN');
      await seen.query(`SELECT set_config('app.tenant_id', $1, true)`, [TENANT_B]);
      await seen.query('SET LOCAL ROLE platform_module_data');
      expect((await seen.query('SELECT count(*)::int AS n FROM module_crm.contacts')).rows[0].n).toBe(0);
      await expect(
        seen.query(`INSERT INTO module_crm.contacts (tenant_id, id, name) VALUES ($1, gen_random_uuid(), 'x')`, [
          TENANT_A,
        ]),
      ).rejects.toThrow(/row-level security/);
    } finally {
      await seen.query('ROLLBACK');
      seen.release();
    }
  });

  it('describes the models as the spec lists them', async () => {
    const list = await a.call('GET', '/data/crm/models');
    expect(list.status).toBe(200);
    expect(list.body.data).toEqual([
      { name: 'contacts', table: 'module_crm.contacts', autoApi: true, columns: 4, relations: [] },
      { name: 'notes', table: 'module_crm.notes', autoApi: true, columns: 4, relations: ['contact'] },
    ]);
    const notes = await a.call('GET', '/data/crm/models/notes');
    expect(notes.body).toEqual({
      name: 'notes',
      table: 'module_crm.notes',
      autoApi: true,
      columns: [
        { name: 'tenant_id', type: 'text', nullable: false },
        { name: 'id', type: 'uuid', nullable: false, pk: true },
        { name: 'contact_id', type: 'uuid', nullable: true },
        { name: 'body', type: 'text', nullable: true },
      ],
      indexes: [
        { name: 'notes_by_contact', columns: ['tenant_id', 'contact_id'] },
        { name: 'notes_pkey', columns: ['id'] },
      ],
      relations: [{ name: 'contact', fk: 'contact_id', references: 'contacts.id' }],
    });
    const stranger = apiClient(p.url, testToken(TENANT_A, 'stranger', ['money.wallets.read']));
    expect((await stranger.call('GET', '/data/crm/models')).status).toBe(403);
  });

  it('enforces the limits: a record over 1 MB is 400, more than 10 filters or a relation deeper than 2 is 422', async () => {
    const big = await a.call('POST', '/data/crm/contacts', { name: 'x'.repeat(1024 * 1024 + 1) });
    expect(big.status).toBe(400);
    const filters = Array.from({ length: 11 }, (_, i) => `name[ne]=n${i}`).join('&');
    const many = await a.call('GET', `/data/crm/contacts?${filters}`);
    expect(many.status).toBe(422);
    expect(many.body.type).toMatch(/too-many-filters$/);
    const deep = await a.call('GET', '/data/crm/notes?expand=contact.a.b');
    expect(deep.status).toBe(422);
    expect(deep.body.type).toMatch(/relation-too-deep$/);
    expect((await a.call('GET', '/data/crm/notes?expand=nothing')).status).toBe(400);
  });

  it("reports usage for billing: the tenant's active modules and its records", async () => {
    const contacts = (await a.call('GET', '/data/crm/contacts?page_size=100')).body.data.length as number;
    const usage = await a.call('GET', '/data/usage');
    expect(usage.body).toEqual({ modules: 1, records: contacts, byModule: [{ slug: 'crm', records: contacts }] });
    expect((await apiClient(p.url, testToken('tenant-crm-none', 'u', [])).call('GET', '/data/usage')).body).toEqual({
      modules: 0,
      records: 0,
      byModule: [],
    });
  });

  it('a deactivated module answers 404 module-not-found and keeps its rows; activated again, they are back', async () => {
    const before = (await a.call('GET', '/data/crm/contacts?page_size=100')).body.data.length as number;
    expect((await owner.call('POST', '/modules/crm/deactivate', { tenantId: TENANT_A })).body.status).toBe('inactive');
    const res = await a.call('GET', '/data/crm/contacts');
    expect(res.status).toBe(404);
    expect(res.body.type).toMatch(/module-not-found$/);
    expect((await b.call('GET', '/data/crm/contacts')).status).toBe(200);
    expect((await owner.call('POST', '/modules/crm/activate', { tenantId: TENANT_A })).body.status).toBe('active');
    expect((await a.call('GET', '/data/crm/contacts?page_size=100')).body.data.length).toBe(before);
  });
});
