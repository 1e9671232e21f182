import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PLATFORM_TENANT_ID } from '../../../domain/identity/constants';
import { testToken } from '../../support/auth';
import { seedTenant } from '../../support/billing';
import { crmManifest } from '../../support/data';
import type { ApiClient, Body } from '../../support/events';
import { apiClient } from '../../support/events';
import type { TestPlatform } from '../../support/platform';
import { startTestPlatform } from '../../support/platform';

/**
 * A module is a first-class caller (issue 23): its key uses its own generated data endpoints and
 * sends notifications, within the permissions its manifest declares for the key (keyPermissions),
 * for the tenants that installed it; another module's data and a tenant that did not install it
 * answer 404 module-not-found; its HTTP calls count per module within the tenant (429 + Retry-After),
 * and its notifications count against notify's per-module limit like kernel.notifications senders'.
 */
const TENANT_A = randomUUID();
const TENANT_B = randomUUID();
const TENANT_R = randomUUID();
const MODULE_LIMIT = 30;
const CRM_KEY = ['crm.contacts.read', 'crm.contacts.write', 'crm.contacts.delete', 'crm.notes.read', 'notify.send'];

/** a second module with one generated model, its key holding all of its own data and nothing of notify */
const tasks = {
  slug: 'tasks',
  version: '1.0.0',
  models: [{ name: 'items', autoApi: true }],
  migrations: [
    {
      version: 1,
      name: 'items',
      sql: 'CREATE TABLE items (tenant_id text NOT NULL, id uuid PRIMARY KEY, title text NOT NULL);',
    },
  ],
  keyPermissions: ['tasks.*'],
};

describe('a module key as a caller of the data layer and notify', () => {
  let p: TestPlatform;
  let owner: ApiClient;
  let crmKey: string;
  let tasksKey: string;
  const as = (key: string, tenantId: string) => apiClient(p.url, key, { 'x-module-tenant': tenantId });
  const user = (tenantId: string, permissions: string[]) =>
    apiClient(p.url, testToken(tenantId, `user-${tenantId}`, permissions));
  const install = async (slug: string, tenantId: string) => {
    const res = await owner.call('POST', `/modules/${slug}/installations`, { tenantId });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
  };

  beforeAll(async () => {
    p = await startTestPlatform({
      services: ['data', 'notify'],
      env: { RATE_LIMIT_MODULE_PER_MIN: String(MODULE_LIMIT) },
    });
    owner = apiClient(p.url, testToken(PLATFORM_TENANT_ID, 'platform-owner', ['platform.*']));
    const crm = await owner.call('POST', '/modules', { ...(await crmManifest()), keyPermissions: CRM_KEY });
    expect(crm.status, JSON.stringify(crm.body)).toBe(201);
    crmKey = crm.body.credentials.key;
    const t = await owner.call('POST', '/modules', tasks);
    expect(t.status, JSON.stringify(t.body)).toBe(201);
    tasksKey = t.body.credentials.key;
    // crm for A and R; tasks for A, B and R: B is a tenant of the platform that did not install crm
    for (const tenant of [TENANT_A, TENANT_B, TENANT_R]) await seedTenant(p.kernel.db, tenant);
    await install('crm', TENANT_A);
    await install('crm', TENANT_R);
    for (const tenant of [TENANT_A, TENANT_B, TENANT_R]) await install('tasks', tenant);
  });
  afterAll(async () => p?.close());

  it('refuses a manifest whose key permissions reach beyond its own models and notifications', async () => {
    // given permissions over another module, the platform's administration and a model it does not have
    const bad = {
      slug: 'greedy',
      version: '1.0.0',
      models: [{ name: 'things', autoApi: true }, { name: 'hidden' }],
      keyPermissions: [
        'greedy.things.write',
        'tasks.items.read',
        'platform.*',
        'notify.manage',
        'users.create',
        'greedy.hidden.read',
        'greedy.ghosts.read',
      ],
    };
    // when the platform owner registers it
    const res = await owner.call('POST', '/modules', bad);
    // then 400 validation-error names each refused entry, and nothing is registered
    expect(res.status, JSON.stringify(res.body)).toBe(400);
    expect(res.body.type).toMatch(/\/validation-error$/);
    expect(res.body.errors.map((e: Body) => [e.field, e.code])).toEqual([
      ['keyPermissions.1', 'FOREIGN_MODULE'],
      ['keyPermissions.2', 'PLATFORM_PERMISSION'],
      ['keyPermissions.3', 'PLATFORM_PERMISSION'],
      ['keyPermissions.4', 'PLATFORM_PERMISSION'],
      ['keyPermissions.5', 'UNKNOWN_PERMISSION'],
      ['keyPermissions.6', 'UNKNOWN_PERMISSION'],
    ]);
    expect((await owner.call('GET', '/modules/greedy')).status).toBe(404);
    // and a new version of a registered module is held to the same rule
    const patched = await owner.call('PATCH', '/modules/crm', {
      ...(await crmManifest()),
      version: '1.1.0',
      keyPermissions: [...CRM_KEY, 'money.wallets.read'],
    });
    expect(patched.status, JSON.stringify(patched.body)).toBe(400);
    expect(patched.body.errors).toEqual([
      expect.objectContaining({ field: 'keyPermissions.5', code: 'PLATFORM_PERMISSION' }),
    ]);
  });

  it("creates, reads, updates and deletes its own records for an installing tenant, seen by the tenant's users", async () => {
    const crm = as(crmKey, TENANT_A);
    // when the key creates a contact for tenant A
    const created = await crm.call('POST', '/data/crm/contacts', { name: 'Ada', email: 'ada@example.com' });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.id as string;
    // then it reads, lists, changes and deletes it
    expect((await crm.call('GET', `/data/crm/contacts/${id}`)).body).toMatchObject({ id, name: 'Ada' });
    const listed = await crm.call('GET', '/data/crm/contacts');
    expect(listed.body.data.map((r: Body) => r.id)).toContain(id);
    const updated = await crm.call('PATCH', `/data/crm/contacts/${id}`, { name: 'Ada L.' });
    expect(updated.status, JSON.stringify(updated.body)).toBe(200);
    // the tenant's own user sees what the module wrote
    const reader = user(TENANT_A, ['crm.contacts.read']);
    expect((await reader.call('GET', `/data/crm/contacts/${id}`)).body).toMatchObject({ name: 'Ada L.' });
    expect((await crm.call('DELETE', `/data/crm/contacts/${id}`)).status).toBe(204);
    expect((await reader.call('GET', `/data/crm/contacts/${id}`)).status).toBe(404);
    // and the writes are the module's: its events name it as their actor
    const actors = await p.kernel.db.query<{ type: string; actor_id: string }>(
      `SELECT type, actor_id FROM es.events WHERE type LIKE 'data.crm.contacts.%' AND tenant_id = $1 ORDER BY position`,
      [TENANT_A],
    );
    expect(actors.rows.map((r) => r.actor_id)).toEqual(['module:crm', 'module:crm', 'module:crm']);
  });

  it('sends a notification as itself: queued under its module, counted against its per-module limit', async () => {
    // when the crm key sends a notification for tenant A
    const sent = await as(crmKey, TENANT_A).call('POST', '/notify', {
      channel: 'email',
      recipient: { address: 'someone@example.com' },
      subject: 'Hello',
      body: 'From the CRM',
    });
    // then it is accepted and queued as the module's (the scope of NOTIFY_RATE_LIMIT_PER_MODULE)
    expect(sent.status, JSON.stringify(sent.body)).toBe(202);
    const row = await p.kernel.db.query<{ tenant_id: string; module: string | null; rate_limited: boolean }>(
      'SELECT tenant_id, module, rate_limited FROM notify.deliveries WHERE id = $1',
      [sent.body.notificationId],
    );
    expect(row.rows).toEqual([{ tenant_id: TENANT_A, module: 'crm', rate_limited: true }]);
    // and it may not retry what another sender of the tenant queued: not there for it (the tenant's user gets 400, not failed)
    const users = await user(TENANT_A, ['notify.send']).call('POST', '/notify', {
      channel: 'email',
      recipient: { address: 'someone@example.com' },
      body: 'From a person',
    });
    expect(users.status, JSON.stringify(users.body)).toBe(202);
    const retried = await as(crmKey, TENANT_A).call('POST', `/notify/${users.body.notificationId}/retry`);
    expect({ status: retried.status, type: retried.body.type }).toEqual({
      status: 404,
      type: expect.stringMatching(/\/not-found$/),
    });
    // and a module whose manifest does not declare notify.send may not send
    const refused = await as(tasksKey, TENANT_A).call('POST', '/notify', {
      channel: 'email',
      recipient: { address: 'someone@example.com' },
      body: 'From tasks',
    });
    expect(refused.status).toBe(403);
    expect(refused.body.type).toMatch(/\/forbidden$/);
  });

  it("answers another module's data as a module that is not installed (404), and leaves it untouched", async () => {
    // given a record of tasks for tenant A, written by the tasks key
    const item = await as(tasksKey, TENANT_A).call('POST', '/data/tasks/items', { title: 'ship it' });
    expect(item.status, JSON.stringify(item.body)).toBe(201);
    const crm = as(crmKey, TENANT_A);
    // when crm's key reaches for tasks' data (installed for the same tenant)
    const answers = [
      await crm.call('GET', '/data/tasks/items'),
      await crm.call('GET', `/data/tasks/items/${item.body.id}`),
      await crm.call('POST', '/data/tasks/items', { title: 'mine now' }),
      await crm.call('DELETE', `/data/tasks/items/${item.body.id}`),
      await crm.call('GET', '/data/tasks/models'),
    ];
    // then every one is 404 module-not-found, as for a module that does not exist
    const absent = await crm.call('GET', '/data/nosuch/items');
    for (const res of [...answers, absent]) {
      expect(res.status).toBe(404);
      expect(res.body.type).toMatch(/\/module-not-found$/);
    }
    // and the tasks record is still there, alone; the key's own module still answers
    const items = await user(TENANT_A, ['tasks.items.read']).call('GET', '/data/tasks/items');
    expect(items.body.data.map((r: Body) => r.title)).toEqual(['ship it']);
    expect((await crm.call('GET', '/data/crm/contacts')).status).toBe(200);
    // its usage shows its own module only
    const usage = await crm.call('GET', '/data/usage');
    expect(usage.body.byModule.map((m: Body) => m.slug)).toEqual(['crm']);
  });

  it('is refused for a tenant that did not install it, exactly as for a tenant that does not exist', async () => {
    // given the key works for tenant A
    expect((await as(crmKey, TENANT_A).call('POST', '/data/crm/contacts', { name: 'Grace' })).status).toBe(201);
    // when it names tenant B (a tenant of the platform, without crm) or a tenant nobody knows
    const b = await as(crmKey, TENANT_B).call('POST', '/data/crm/contacts', { name: 'Intruder' });
    const nobody = await as(crmKey, randomUUID()).call('POST', '/data/crm/contacts', { name: 'X' });
    // then both are the same 404 module-not-found: nothing tells the tenants apart
    expect(b.status).toBe(404);
    expect(b.body.type).toMatch(/\/module-not-found$/);
    expect({ status: nobody.status, type: nobody.body.type, detail: nobody.body.detail }).toEqual({
      status: b.status,
      type: b.body.type,
      detail: b.body.detail,
    });
    const rows = await p.kernel.db.query('SELECT 1 FROM module_crm.contacts WHERE tenant_id = $1', [TENANT_B]);
    expect(rows.rowCount).toBe(0);
  });

  it('is refused beyond the permissions its manifest declares (403 forbidden)', async () => {
    const crm = as(crmKey, TENANT_A);
    // declared: crm.notes.read — listed
    expect((await crm.call('GET', '/data/crm/notes')).status).toBe(200);
    // not declared: crm.notes.write, crm.notes.delete, notify.read
    const refused = [
      await crm.call('POST', '/data/crm/notes', { body: 'a note' }),
      await crm.call('DELETE', '/data/crm/notes/0190a0a0-0000-7000-8000-00000000abcd'),
      await crm.call('GET', '/notify'),
    ];
    for (const res of refused) {
      expect(res.status, JSON.stringify(res.body)).toBe(403);
      expect(res.body.type).toMatch(/\/forbidden$/);
    }
  });

  it('is rate limited per module within the tenant: 429 with Retry-After, other callers of the tenant unaffected', async () => {
    const crm = as(crmKey, TENANT_R);
    // when the crm key spends its minute's worth of calls for tenant R
    const spent = await Promise.all(Array.from({ length: MODULE_LIMIT }, () => crm.call('GET', '/data/crm/contacts')));
    expect(spent.map((r) => r.status)).toEqual(Array.from({ length: MODULE_LIMIT }, () => 200));
    expect(spent[0]!.headers.get('x-ratelimit-limit')).toBe(String(MODULE_LIMIT));
    // then its next call is 429 rate-limit-exceeded with Retry-After
    const over = await crm.call('GET', '/data/crm/contacts');
    expect(over.status).toBe(429);
    expect(over.body.type).toMatch(/\/rate-limit-exceeded$/);
    expect(Number(over.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    // and another module and a person of the same tenant, and crm for another tenant, still answer
    expect((await as(tasksKey, TENANT_R).call('GET', '/data/tasks/items')).status).toBe(200);
    expect((await user(TENANT_R, ['crm.contacts.read']).call('GET', '/data/crm/contacts')).status).toBe(200);
    expect((await as(crmKey, TENANT_A).call('GET', '/data/crm/contacts')).status).toBe(200);
  });
});
