import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PLATFORM_TENANT_ID } from '../../../domain/identity/constants';
import type { Manifest } from '../../../domain/modules/manifest';
import type { Tx } from '../../../infra/postgres/db';
import { asTenantRead, expandRelations, loadModels } from '../../../projections/data/queries';
import { testToken } from '../../support/auth';
import type { ApiClient } from '../../support/events';
import { apiClient } from '../../support/events';
import type { TestPlatform } from '../../support/platform';
import { startTestPlatform } from '../../support/platform';

/**
 * `expand` on a list: each row gets the row its foreign key references — by the referenced column,
 * which need not be the id — one query per relation and level whatever the page's size, and never
 * a row of another tenant (the registry scopes every key to the tenant: a reference to another
 * tenant's key is refused, and a unique code is unique within the tenant).
 */
const TENANT_A = 'tenant-expand-a';
const TENANT_B = 'tenant-expand-b';
const SHOP = ['regions', 'customers', 'orders'].flatMap((m) => [`shop.${m}.read`, `shop.${m}.write`]);
const models = ['regions', 'customers', 'orders'].map((name) => ({ name, autoApi: true }));
const manifest: Manifest = {
  slug: 'shop',
  version: '1.0.0',
  events: { publishes: [], subscribes: [] },
  models,
  migrations: [
    {
      version: 1,
      name: 'tables',
      sql: `CREATE TABLE regions (tenant_id text NOT NULL, id uuid PRIMARY KEY, name text NOT NULL);
        CREATE TABLE customers (tenant_id text NOT NULL, id uuid PRIMARY KEY, code text NOT NULL UNIQUE, name text NOT NULL,
          region_id uuid REFERENCES regions (id));
        CREATE TABLE orders (tenant_id text NOT NULL, id uuid PRIMARY KEY, customer_id text REFERENCES customers (code), total int NOT NULL);`,
    },
  ],
};

describe('expand on a list of generated records', () => {
  let p: TestPlatform;
  let a: ApiClient;
  let b: ApiClient;

  beforeAll(async () => {
    p = await startTestPlatform({ services: ['data'] });
    const owner = apiClient(p.url, testToken(PLATFORM_TENANT_ID, 'platform-owner', ['platform.*']));
    expect((await owner.call('POST', '/modules', manifest)).status).toBe(201);
    for (const tenantId of [TENANT_A, TENANT_B])
      expect((await owner.call('POST', '/modules/shop/installations', { tenantId })).status).toBe(201);
    a = apiClient(p.url, testToken(TENANT_A, 'user-a', SHOP));
    b = apiClient(p.url, testToken(TENANT_B, 'user-b', SHOP));
  });
  afterAll(async () => p?.close());

  it('gives each row its referenced row by the referenced column, two levels deep, null where there is none', async () => {
    const north = (await a.call('POST', '/data/shop/regions', { name: 'North' })).body;
    const ada = (await a.call('POST', '/data/shop/customers', { code: 'c-ada', name: 'Ada', region_id: north.id }))
      .body;
    const bob = (await a.call('POST', '/data/shop/customers', { code: 'c-bob', name: 'Bob' })).body;
    const orders = [];
    for (const [customer_id, total] of [
      ['c-ada', 10],
      ['c-bob', 20],
      ['c-ada', 30],
      [null, 40],
      ['c-ada', 50],
    ] as const)
      orders.push((await a.call('POST', '/data/shop/orders', { customer_id, total })).body);

    const page = await a.call('GET', '/data/shop/orders?expand=customer.region&sort=total&page_size=100');
    expect(page.status).toBe(200);
    const adaWithRegion = { ...ada, region: north };
    expect(page.body.data).toEqual([
      { ...orders[0], customer: adaWithRegion },
      { ...orders[1], customer: { ...bob, region: null } },
      { ...orders[2], customer: adaWithRegion },
      { ...orders[3], customer: null },
      { ...orders[4], customer: adaWithRegion },
    ]);
  });

  it("refuses a key of another tenant's row; the tenant's own row of the same key is the one expanded", async () => {
    // tenant B's order naming tenant A's customer code: the key is checked within the tenant (422, as for no row)
    const foreign = await b.call('POST', '/data/shop/orders', { customer_id: 'c-ada', total: 1 });
    expect(foreign.status, JSON.stringify(foreign.body)).toBe(422);
    expect(foreign.body.errors[0].field).toBe('customer_id');
    // the code is unique within the tenant: B may have a c-ada of its own, and its order expands to it
    const own = await b.call('POST', '/data/shop/customers', { code: 'c-ada', name: 'Ada of B' });
    expect(own.status, JSON.stringify(own.body)).toBe(201);
    const order = await b.call('POST', '/data/shop/orders', { customer_id: 'c-ada', total: 1 });
    expect(order.status).toBe(201);
    const page = await b.call('GET', '/data/shop/orders?expand=customer');
    expect(page.body.data).toEqual([{ ...order.body, customer: own.body }]);
  });

  it('reads each relation and level with one query, whatever the number of rows', async () => {
    const shopModels = await loadModels(p.kernel.db, 'shop', { models });
    const orders = shopModels.find((m) => m.name === 'orders')!;
    const rows = (
      await p.kernel.db.query<Record<string, unknown>>(
        `SELECT * FROM module_shop.orders WHERE tenant_id = $1 ORDER BY total`,
        [TENANT_A],
      )
    ).rows;
    expect(rows).toHaveLength(5);
    const statements: string[] = [];
    await asTenantRead(p.kernel, TENANT_A, async (tx) => {
      const counting = {
        query: (text: string, values?: unknown[]) => {
          statements.push(text);
          return tx.query(text, values);
        },
      } as Tx;
      await expandRelations(counting, shopModels, orders, TENANT_A, rows, [['customer', 'region']]);
    });
    expect(statements).toHaveLength(2); // customers, then regions
    expect(rows.map((r) => (r.customer as { code?: string } | null)?.code ?? null)).toEqual([
      'c-ada',
      'c-bob',
      'c-ada',
      null,
      'c-ada',
    ]);
  });
});
