import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scopeInstalledSchemas } from '../../../commands/modules/migrate';
import { PLATFORM_TENANT_ID } from '../../../domain/identity/constants';
import type { Manifest } from '../../../domain/modules/manifest';
import { testToken } from '../../support/auth';
import { crmManifest } from '../../support/data';
import type { ApiClient, Body } from '../../support/events';
import { apiClient } from '../../support/events';
import type { TestPlatform } from '../../support/platform';
import { startTestPlatform } from '../../support/platform';

/**
 * Generated writes keep the integrity of the module's tables, per tenant (issue 22; DESIGN.md
 * mechanism 4): a foreign key is checked within the tenant, so another tenant's row is refused
 * exactly like a missing one and can never be pinned; every constraint a write breaks is a problem
 * (unique 409, reference 422, check and not-null 400, a delete still referenced 409), never a 500,
 * and a refused write records no event; dates PostgreSQL cannot hold are 400 on the field.
 */
const TENANT_A = 'tenant-integrity-a';
const TENANT_B = 'tenant-integrity-b';
const CRM = ['contacts', 'notes'].flatMap((m) => ['read', 'write', 'delete'].map((a) => `crm.${m}.${a}`));
const STOCK = ['items', 'parts', 'tags'].flatMap((m) => ['read', 'write', 'delete'].map((a) => `stock.${m}.${a}`));
const UNKNOWN_ID = '0190a0a0-0000-7000-8000-00000000abcd';

/** a module with a unique column, checks, a NOT NULL domain, dates, and relations that cascade and set null */
const stock: Manifest = {
  slug: 'stock',
  version: '1.0.0',
  events: { publishes: [], subscribes: [] },
  models: ['items', 'parts', 'tags'].map((name) => ({ name, autoApi: true })),
  migrations: [
    {
      version: 1,
      name: 'tables',
      sql: `CREATE DOMAIN label_text AS text NOT NULL;
        CREATE DOMAIN percent AS int CHECK (VALUE BETWEEN 0 AND 100);
        CREATE TABLE items (tenant_id text NOT NULL, id uuid PRIMARY KEY, sku text NOT NULL UNIQUE,
          qty int NOT NULL DEFAULT 0 CONSTRAINT qty_not_negative CHECK (qty >= 0), label label_text, discount percent,
          due date, seen_at timestamptz, attrs jsonb NOT NULL DEFAULT '{}');
        CREATE TABLE parts (tenant_id text NOT NULL, id uuid PRIMARY KEY, item_id uuid REFERENCES items (id) ON DELETE CASCADE,
          name text);
        CREATE TABLE tags (tenant_id text NOT NULL, id uuid PRIMARY KEY, item_id uuid REFERENCES items (id) ON DELETE SET NULL,
          name text, sku text REFERENCES items (sku) ON UPDATE CASCADE);`,
    },
  ],
};

/** a problem without what differs from one request to the next */
const comparable = (body: Body): Body => {
  const { traceId: _trace, instance: _instance, ...rest } = body as Record<string, unknown>;
  return rest;
};

describe('generated writes of a module with relations, unique columns and checks, for two tenants', () => {
  let p: TestPlatform;
  let owner: ApiClient;
  let a: ApiClient;
  let b: ApiClient;

  const eventsOf = async (type: string, field: string, value: string): Promise<number> =>
    (
      await p.kernel.db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM es.events WHERE type = $1 AND tenant_id = $2 AND data->'after'->>$3 = $4`,
        [type, TENANT_A, field, value],
      )
    ).rows[0]!.n;

  beforeAll(async () => {
    p = await startTestPlatform({ services: ['data'] });
    owner = apiClient(p.url, testToken(PLATFORM_TENANT_ID, 'platform-owner', ['platform.*']));
    a = apiClient(p.url, testToken(TENANT_A, 'user-a', [...CRM, ...STOCK]));
    b = apiClient(p.url, testToken(TENANT_B, 'user-b', [...CRM, ...STOCK]));
    expect((await owner.call('POST', '/modules', await crmManifest())).status).toBe(201);
    expect((await owner.call('POST', '/modules', stock)).status).toBe(201);
    for (const slug of ['crm', 'stock'])
      for (const tenantId of [TENANT_A, TENANT_B]) {
        const installed = await owner.call('POST', `/modules/${slug}/installations`, { tenantId });
        expect(installed.status, JSON.stringify(installed.body)).toBe(201);
      }
  });
  afterAll(async () => p?.close());

  describe('a note naming a contact', () => {
    it('refuses a contact that does not exist with 422 naming contact_id, and records nothing', async () => {
      const res = await a.call('POST', '/data/crm/notes', { contact_id: UNKNOWN_ID, body: 'nobody' });
      expect(res.status, JSON.stringify(res.body)).toBe(422);
      expect(res.body.type).toMatch(/\/validation-error$/);
      expect(res.body.errors).toEqual([
        { field: 'contact_id', message: expect.any(String), code: 'REFERENCE_NOT_FOUND' },
      ]);
      expect(JSON.stringify(res.body)).not.toContain(UNKNOWN_ID);
      expect(await eventsOf('data.crm.notes.created', 'body', 'nobody')).toBe(0);
    });

    it("refuses another tenant's contact exactly like a missing one, and that tenant can still delete it", async () => {
      const theirs = await b.call('POST', '/data/crm/contacts', { name: 'Private' });
      expect(theirs.status).toBe(201);
      const foreign = await a.call('POST', '/data/crm/notes', { contact_id: theirs.body.id, body: 'pinned' });
      const missing = await a.call('POST', '/data/crm/notes', { contact_id: UNKNOWN_ID, body: 'pinned' });
      expect(foreign.status, JSON.stringify(foreign.body)).toBe(422);
      expect(comparable(foreign.body)).toEqual(comparable(missing.body));
      expect(await eventsOf('data.crm.notes.created', 'body', 'pinned')).toBe(0);

      // a change onto another tenant's contact is refused the same way
      const mine = (await a.call('POST', '/data/crm/contacts', { name: 'Mine' })).body.id as string;
      const note = await a.call('POST', '/data/crm/notes', { contact_id: mine, body: 'fine' });
      expect(note.status).toBe(201);
      const moved = await a.call('PATCH', `/data/crm/notes/${note.body.id}`, { contact_id: theirs.body.id });
      expect(moved.status, JSON.stringify(moved.body)).toBe(422);
      expect(comparable(moved.body)).toEqual(comparable(missing.body));
      expect((await a.call('GET', `/data/crm/notes/${note.body.id}`)).body.contact_id).toBe(mine);

      expect((await b.call('DELETE', `/data/crm/contacts/${theirs.body.id}`)).status).toBe(204);
    });

    it('refuses to delete a contact its notes still reference: 409 conflict naming the relation; the contact stays', async () => {
      const contact = (await a.call('POST', '/data/crm/contacts', { name: 'Referenced' })).body.id as string;
      expect((await a.call('POST', '/data/crm/notes', { contact_id: contact, body: 'keeps it' })).status).toBe(201);
      const res = await a.call('DELETE', `/data/crm/contacts/${contact}`);
      expect(res.status, JSON.stringify(res.body)).toBe(409);
      expect(res.body.type).toMatch(/\/conflict$/);
      expect(res.body.errors).toEqual([
        { field: 'notes.contact_id', message: expect.any(String), code: 'STILL_REFERENCED' },
      ]);
      expect((await a.call('GET', `/data/crm/contacts/${contact}`)).status).toBe(200);
      const deleted = await p.kernel.db.query(
        `SELECT 1 FROM es.events WHERE type = 'data.crm.contacts.deleted' AND data->>'id' = $1`,
        [contact],
      );
      expect(deleted.rowCount).toBe(0);
    });
  });

  describe('a unique column', () => {
    it('refuses a create that collides with 409 conflict naming the field: no id, no event, no row', async () => {
      expect((await a.call('POST', '/data/stock/items', { sku: 'A-1', label: 'first' })).status).toBe(201);
      const res = await a.call('POST', '/data/stock/items', { sku: 'A-1', label: 'second' });
      expect(res.status, JSON.stringify(res.body)).toBe(409);
      expect(res.body.type).toMatch(/\/conflict$/);
      expect(res.body.errors).toEqual([{ field: 'sku', message: expect.any(String), code: 'UNIQUE' }]);
      expect(res.body.id).toBeUndefined();
      expect(await eventsOf('data.stock.items.created', 'label', 'second')).toBe(0);
      const rows = await a.call('GET', '/data/stock/items?sku=A-1');
      expect(rows.body.data.map((r: { label: string }) => r.label)).toEqual(['first']);
    });

    it('refuses a change onto a value another record holds with 409 naming the field; the record is unchanged', async () => {
      const other = await a.call('POST', '/data/stock/items', { sku: 'B-1', label: 'other' });
      expect(other.status).toBe(201);
      const res = await a.call('PATCH', `/data/stock/items/${other.body.id}`, { sku: 'A-1' });
      expect(res.status, JSON.stringify(res.body)).toBe(409);
      expect(res.body.errors).toEqual([{ field: 'sku', message: expect.any(String), code: 'UNIQUE' }]);
      expect((await a.call('GET', `/data/stock/items/${other.body.id}`)).body.sku).toBe('B-1');
      expect(await eventsOf('data.stock.items.updated', 'sku', 'A-1')).toBe(0);
    });

    it("is unique within the tenant: another tenant's equal value neither collides nor shows", async () => {
      const theirs = await b.call('POST', '/data/stock/items', { sku: 'A-1', label: 'theirs' });
      expect(theirs.status, JSON.stringify(theirs.body)).toBe(201);
      expect((await b.call('GET', `/data/stock/items/${theirs.body.id}`)).body).toEqual(theirs.body);
      expect((await a.call('GET', '/data/stock/items?sku=A-1')).body.data).toHaveLength(1);
    });
  });

  describe('checks and NOT NULL', () => {
    it('refuses a check a value breaks, a table check or a domain check, with 400 naming the field; nothing recorded', async () => {
      const table = await a.call('POST', '/data/stock/items', { sku: 'C-1', label: 'neg', qty: -1 });
      expect(table.status, JSON.stringify(table.body)).toBe(400);
      expect(table.body.type).toMatch(/\/validation-error$/);
      expect(table.body.errors).toEqual([{ field: 'qty', message: expect.any(String), code: 'CHECK_VIOLATION' }]);
      const domain = await a.call('POST', '/data/stock/items', { sku: 'C-2', label: 'pct', discount: 101 });
      expect(domain.status, JSON.stringify(domain.body)).toBe(400);
      expect(domain.body.errors).toEqual([{ field: 'discount', message: expect.any(String), code: 'CHECK_VIOLATION' }]);
      const item = (await a.call('POST', '/data/stock/items', { sku: 'C-3', label: 'ok' })).body.id as string;
      const patched = await a.call('PATCH', `/data/stock/items/${item}`, { qty: -5 });
      expect(patched.status, JSON.stringify(patched.body)).toBe(400);
      expect(patched.body.errors[0].field).toBe('qty');
      expect((await a.call('GET', `/data/stock/items/${item}`)).body.qty).toBe(0);
      expect(await eventsOf('data.stock.items.created', 'sku', 'C-1')).toBe(0);
    });

    it('refuses null for a NOT NULL column with 400 naming the field: a JSON column, a NOT NULL domain; nothing recorded', async () => {
      const json = await a.call('POST', '/data/stock/items', { sku: 'N-1', label: 'json', attrs: null });
      expect(json.status, JSON.stringify(json.body)).toBe(400);
      expect(json.body.type).toMatch(/\/validation-error$/);
      expect(json.body.errors.map((e: { field: string }) => e.field)).toEqual(['attrs']);
      const item = (await a.call('POST', '/data/stock/items', { sku: 'N-2', label: 'ok', attrs: { a: 1 } })).body
        .id as string;
      const cleared = await a.call('PATCH', `/data/stock/items/${item}`, { attrs: null });
      expect(cleared.status, JSON.stringify(cleared.body)).toBe(400);
      expect((await a.call('GET', `/data/stock/items/${item}`)).body.attrs).toEqual({ a: 1 });
      expect(await eventsOf('data.stock.items.created', 'sku', 'N-1')).toBe(0);
      for (const body of [{ sku: 'N-3', label: null }, { sku: 'N-4' }]) {
        const res = await a.call('POST', '/data/stock/items', body);
        expect(res.status, JSON.stringify(res.body)).toBe(400);
        expect(res.body.errors.map((e: { field: string }) => e.field)).toEqual(['label']);
      }
    });
  });

  describe('dates PostgreSQL cannot hold', () => {
    it('refuses them in a record with 400 naming the field', async () => {
      for (const [field, value] of [
        ['due', '0000-01-01'],
        ['due', '10000-01-01'],
        ['seen_at', '0000-06-01T00:00:00Z'],
        ['seen_at', '2026-01-01T00:00:00+16:00'],
        ['seen_at', '2026-01-01T00:00:00-23:59'],
      ] as const) {
        const res = await a.call('POST', '/data/stock/items', {
          sku: `D-${field}-${value}`,
          label: 'd',
          [field]: value,
        });
        expect(res.status, `${field}=${value}: ${JSON.stringify(res.body)}`).toBe(400);
        expect(res.body.type).toMatch(/\/validation-error$/);
        expect(res.body.errors.map((e: { field: string }) => e.field)).toEqual([field]);
      }
      const fine = await a.call('POST', '/data/stock/items', {
        sku: 'D-ok',
        label: 'd',
        due: '0001-01-01',
        seen_at: '9999-12-31T23:59:59+00:00',
      });
      expect(fine.status, JSON.stringify(fine.body)).toBe(201);
      expect(fine.body.due).toMatch(/^0001-01-0[12]|^0000-12-31/); // a date as the driver reads it back
    });

    it('refuses them in a list filter with 400 naming the filter', async () => {
      for (const filter of [
        'due=0000-01-01',
        'due[lt]=10000-01-01',
        'seen_at[gte]=0000-01-01T00:00:00Z',
        'seen_at[gte]=2026-01-01T00:00:00%2B16:00',
        'seen_at[lt]=2026-01-01T00:00:00-99:00',
        'seen_at=yesterday%202020',
      ]) {
        const res = await a.call('GET', `/data/stock/items?${filter}`);
        expect(res.status, `${filter}: ${JSON.stringify(res.body)}`).toBe(400);
        expect(res.body.type).toMatch(/\/validation-error$/);
        expect(res.body.errors.map((e: { field: string }) => e.field)).toEqual([filter.slice(0, filter.indexOf('='))]);
      }
      const fine = await a.call(
        'GET',
        '/data/stock/items?seen_at[lte]=9999-12-31T23:59:59%2B15:59&due[gte]=0001-01-01',
      );
      expect(fine.status, JSON.stringify(fine.body)).toBe(200);
    });
  });

  describe('an item its parts cascade from and its tags point at with ON DELETE SET NULL', () => {
    it('deleting it deletes the parts and clears the tags, each with its event, as the schema says', async () => {
      const item = (await a.call('POST', '/data/stock/items', { sku: 'E-1', label: 'parent' })).body.id as string;
      const part = (await a.call('POST', '/data/stock/parts', { item_id: item, name: 'wheel' })).body.id as string;
      const tag = (await a.call('POST', '/data/stock/tags', { item_id: item, name: 'red' })).body.id as string;

      expect((await a.call('DELETE', `/data/stock/items/${item}`)).status).toBe(204);
      expect((await a.call('GET', `/data/stock/parts/${part}`)).status).toBe(404);
      expect((await a.call('GET', `/data/stock/tags/${tag}`)).body).toEqual({
        id: tag,
        item_id: null,
        name: 'red',
        sku: null,
      });
      const events = (
        await p.kernel.db.query<{ type: string; id: string; after: unknown }>(
          `SELECT type, data->>'id' AS id, data->'after' AS after FROM es.events
           WHERE tenant_id = $1 AND data->>'id' = ANY($2) ORDER BY position`,
          [TENANT_A, [item, part, tag]],
        )
      ).rows;
      expect(events.slice(3)).toEqual([
        { type: 'data.stock.parts.deleted', id: part, after: null },
        { type: 'data.stock.tags.updated', id: tag, after: { item_id: null, name: 'red', sku: null } },
        { type: 'data.stock.items.deleted', id: item, after: null },
      ]);
    });
  });

  describe('an item whose sku its tags reference with ON UPDATE CASCADE', () => {
    it('changing the sku changes the tags, each with its event', async () => {
      const item = (await a.call('POST', '/data/stock/items', { sku: 'F-1', label: 'renamed' })).body.id as string;
      const tag = (await a.call('POST', '/data/stock/tags', { sku: 'F-1', name: 'blue' })).body.id as string;
      const changed = await a.call('PATCH', `/data/stock/items/${item}`, { sku: 'F-2' });
      expect(changed.status, JSON.stringify(changed.body)).toBe(200);
      expect((await a.call('GET', `/data/stock/tags/${tag}`)).body.sku).toBe('F-2');
      const updated = await p.kernel.db.query<{ sku: string }>(
        `SELECT data->'after'->>'sku' AS sku FROM es.events WHERE type = 'data.stock.tags.updated' AND data->>'id' = $1`,
        [tag],
      );
      expect(updated.rows).toEqual([{ sku: 'F-2' }]);
    });
  });

  describe('a record an earlier version answered 201 for without storing its row', () => {
    it('answers 404 to a change and to a delete, and records nothing', async () => {
      // given a record's stream without its row (what a create colliding with a unique key left before)
      const created = await a.call('POST', '/data/stock/items', { sku: 'G-1', label: 'phantom' });
      await p.kernel.db.query('DELETE FROM module_stock.items WHERE id = $1', [created.body.id]);
      const events = async () =>
        (await p.kernel.db.query(`SELECT 1 FROM es.events WHERE data->>'id' = $1`, [created.body.id])).rowCount;
      const before = await events();
      expect((await a.call('PATCH', `/data/stock/items/${created.body.id}`, { label: 'x' })).status).toBe(404);
      expect((await a.call('DELETE', `/data/stock/items/${created.body.id}`)).status).toBe(404);
      expect(await events()).toBe(before);
    });
  });

  describe('a schema an earlier version installed, with foreign keys that ignore the tenant', () => {
    it('is scoped to the tenant at the next start: a pinned row is freed, and a foreign reference is refused', async () => {
      // given crm's notes as the registry left them before (a plain foreign key), and a note of A pinning B's contact
      await p.kernel.db.query(`ALTER TABLE module_crm.notes DROP CONSTRAINT notes_contact_id_fkey,
        ADD CONSTRAINT notes_contact_id_fkey FOREIGN KEY (contact_id) REFERENCES module_crm.contacts (id)`);
      const theirs = (await b.call('POST', '/data/crm/contacts', { name: 'Pinned' })).body.id as string;
      await p.kernel.db.query(
        `INSERT INTO module_crm.notes (tenant_id, id, contact_id, body) VALUES ($1, gen_random_uuid(), $2, 'old pin')`,
        [TENANT_A, theirs],
      );

      // when the registry scopes the installed schemas (as it does at start)
      await scopeInstalledSchemas(p.kernel);

      // then the key holds the tenant, B deletes its contact, and A cannot pin another
      const fk = await p.kernel.db.query<{ columns: string[] }>(
        `SELECT array(SELECT a.attname FROM unnest(c.conkey) k(n) JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.n)::text[] AS columns
         FROM pg_constraint c WHERE c.conname = 'notes_contact_id_fkey'`,
      );
      expect(fk.rows[0]!.columns.sort()).toEqual(['contact_id', 'tenant_id']);
      expect((await b.call('DELETE', `/data/crm/contacts/${theirs}`)).status).toBe(204);
      const again = (await b.call('POST', '/data/crm/contacts', { name: 'Pinned again' })).body.id as string;
      expect((await a.call('POST', '/data/crm/notes', { contact_id: again, body: 'x' })).status).toBe(422);
      await scopeInstalledSchemas(p.kernel); // a second start finds nothing to do
    });
  });

  it('given concurrent creates of two tenants without Idempotency-Key, a duplicate sku and a reference to no row among them, then they share transactions (group commit) and each is answered as alone', async () => {
    // given 20 items per tenant, two with one sku, and a part of an item that does not exist, all at once
    const skus = (t: string) => Array.from({ length: 20 }, (_, i) => `batch-${t}-${i}`);
    const [ofA, ofB, dup, missing] = await Promise.all([
      Promise.all(skus('a').map((sku) => a.call('POST', '/data/stock/items', { sku, qty: 1, label: 'x' }))),
      Promise.all(skus('b').map((sku) => b.call('POST', '/data/stock/items', { sku, qty: 2, label: 'x' }))),
      Promise.all([1, 2].map(() => a.call('POST', '/data/stock/items', { sku: 'batch-dup', label: 'x' }))),
      a.call('POST', '/data/stock/parts', { item_id: UNKNOWN_ID, name: 'orphan' }),
    ]);

    // then each is answered as alone: 201 with its row as stored, the second sku 409 on the field, the reference 422
    for (const [i, res] of ofA.entries())
      expect({ status: res.status, sku: res.body.sku, qty: res.body.qty }).toEqual({
        status: 201,
        sku: `batch-a-${i}`,
        qty: 1,
      });
    for (const [i, res] of ofB.entries())
      expect({ status: res.status, sku: res.body.sku, qty: res.body.qty }).toEqual({
        status: 201,
        sku: `batch-b-${i}`,
        qty: 2,
      });
    expect(dup.map((r) => r.status).sort()).toEqual([201, 409]);
    expect(dup.find((r) => r.status === 409)!.body.errors?.[0]?.field).toBe('sku');
    expect(missing.status).toBe(422);
    // each tenant's rows are its own, and each created row has its one event in its tenant, a refused one none
    const rows = await p.kernel.db.query<{ tenant_id: string; sku: string }>(
      `SELECT tenant_id, sku FROM module_stock.items WHERE sku LIKE 'batch-%' ORDER BY sku`,
    );
    expect(rows.rows.filter((r) => r.sku.startsWith('batch-a-')).every((r) => r.tenant_id === TENANT_A)).toBe(true);
    expect(rows.rows.filter((r) => r.sku.startsWith('batch-b-')).every((r) => r.tenant_id === TENANT_B)).toBe(true);
    expect(rows.rowCount).toBe(41);
    const events = await p.kernel.db.query<{ tenant_id: string; sku: string; tx: string }>(
      `SELECT tenant_id, data->'after'->>'sku' AS sku, transaction_id::text AS tx FROM es.events
       WHERE type = 'data.stock.items.created' AND data->'after'->>'sku' LIKE 'batch-%'`,
    );
    expect(events.rows.map((e) => `${e.tenant_id} ${e.sku}`).sort()).toEqual(
      rows.rows.map((r) => `${r.tenant_id} ${r.sku}`).sort(),
    );
    expect(await eventsOf('data.stock.parts.created', 'name', 'orphan')).toBe(0);
    // and creates arriving together were committed together: fewer transactions than creates
    expect(new Set(events.rows.map((e) => e.tx)).size).toBeLessThan(events.rows.length);
  });
});
