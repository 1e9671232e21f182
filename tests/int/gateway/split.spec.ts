import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearerToken } from '../../../infra/http/auth';
import { defineRoutes, mergeServiceParts } from '../../../infra/services';
import { testToken } from '../../support/auth';
import { moneyClient, moneyServices } from '../../support/money';
import type { TestPlatform } from '../../support/platform';
import { startTestPlatform, tallyServices } from '../../support/platform';
import { freePort } from '../../support/process';

/** a write route whose plugin declares its own parsers, as money does for exact JSON numbers */
const ownParsers = defineRoutes({
  namespace: 'parsers',
  register(app, kernel) {
    // a public route that reads a token itself when one is sent (as identity's MFA verify does)
    app.get('/parsers/who', { config: { access: 'public' } }, async (request) => {
      const token = bearerToken(request.headers.authorization);
      return { userId: token ? (await kernel.authenticator.authenticate(token)).userId : null };
    });
    app.removeContentTypeParser('application/json');
    app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
      try {
        JSON.parse(String(body));
        done(null, { text: String(body) });
      } catch (error) {
        done(Object.assign(error as Error, { statusCode: 400 }), undefined);
      }
    });
    app.addContentTypeParser('text/csv', { parseAs: 'buffer' }, (_request, body, done) =>
      done(null, { text: (body as Buffer).toString('utf8') }),
    );
    app.post('/parsers/echo', { config: { whileSuspended: 'refused' } }, async (request) => ({
      contentType: request.headers['content-type'],
      received: request.body,
    }));
  },
});
const services = mergeServiceParts(tallyServices, moneyServices, { write: [ownParsers] });

/** split deployment: a gateway proxying to a write-api and a read-api on one database */
let writeApi: TestPlatform;
let readApi: TestPlatform;
let gateway: TestPlatform;
const secret = randomBytes(32).toString('base64');
const token = (tenant: string) => testToken(tenant, 'user-1', ['tally.*']);
const json = (tenant: string) => ({ authorization: `Bearer ${token(tenant)}`, 'content-type': 'application/json' });

beforeAll(async () => {
  // every role has the one ROOT_URL: the gateway's
  const port = await freePort();
  const shared = { PLATFORM_SECRET_KEY: secret, ROOT_URL: `http://127.0.0.1:${port}` };
  writeApi = await startTestPlatform({ role: 'write-api', services, env: shared });
  readApi = await startTestPlatform({
    role: 'read-api',
    services,
    env: { ...shared, DATABASE_URL: writeApi.database.url },
  });
  gateway = await startTestPlatform({
    role: 'gateway',
    services,
    env: { ...shared, PORT: String(port), WRITE_API_URL: writeApi.url, READ_API_URL: readApi.url },
  });
});
afterAll(async () => {
  await gateway?.close();
  await readApi?.close();
  await writeApi?.close();
});

describe('a gateway in front of write-api and read-api', () => {
  it('sends mutations to write-api and queries to read-api', async () => {
    const created = await gateway.http('/v1/tally/counters', {
      method: 'POST',
      headers: json('tenant-a'),
      body: JSON.stringify({ id: 'c1', name: 'first' }),
    });
    expect(created.status).toBe(201);
    expect(await created.json()).toEqual({ id: 'c1', name: 'first', value: 0 });
    const one = await gateway.http('/v1/tally/counters/c1', { headers: json('tenant-a') });
    expect(one.status).toBe(200);
    expect(await one.json()).toEqual({ id: 'c1', name: 'first', value: 0 });
    const list = await gateway.http('/api/v1/tally/counters', { headers: json('tenant-a') });
    expect(await list.json()).toEqual({ data: [{ id: 'c1', name: 'first', value: 0 }] });
  });

  it('passes the Idempotency-Key through and replays the stored answer', async () => {
    await gateway.http('/v1/tally/counters', {
      method: 'POST',
      headers: json('tenant-a'),
      body: JSON.stringify({ id: 'c2', name: 'second' }),
    });
    const key = '0191d8a4-7c3e-7a1b-8c2d-0123456789ab';
    const send = () =>
      gateway.http('/v1/tally/counters/c2/increment', {
        method: 'POST',
        headers: { ...json('tenant-a'), 'idempotency-key': key },
        body: JSON.stringify({ by: 5 }),
      });
    const first = await send();
    const second = await send();
    expect(first.status).toBe(200);
    expect(second.status).toBe(200);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    expect(await second.json()).toEqual({ id: 'c2', name: 'second', value: 5 });
  });

  it('keeps a tenant smuggled in body, query and X-Tenant-ID out of the services', async () => {
    const res = await gateway.http('/v1/tally/counters?tenantId=tenant-b', {
      method: 'POST',
      headers: { ...json('tenant-a'), 'x-tenant-id': 'tenant-b' },
      body: JSON.stringify({ id: 'smuggled', name: 's', tenantId: 'tenant-b' }),
    });
    expect(res.status).toBe(201);
    const b = await gateway.http('/v1/tally/counters', { headers: { ...json('tenant-b'), 'x-tenant-id': 'tenant-a' } });
    expect(await b.json()).toEqual({ data: [] });
    const a = await gateway.http('/v1/tally/counters/smuggled', { headers: json('tenant-a') });
    expect(a.status).toBe(200);
  });

  it('refuses what the gateway refuses before reaching a service', async () => {
    const invalid = await gateway.http('/v1/tally/counters', {
      method: 'POST',
      headers: json('tenant-a'),
      body: JSON.stringify({ id: 1 }),
    });
    expect(invalid.status).toBe(400);
    const problem = (await invalid.json()) as { errors: unknown[] };
    expect(problem.errors.length).toBeGreaterThan(0);
    expect(
      (
        await gateway.http('/v1/tally/counters', {
          method: 'POST',
          headers: { ...json('tenant-a'), 'content-type': 'text/plain' },
          body: 'x',
        })
      ).status,
    ).toBe(415);
  });
});

describe('request bodies through the gateway', () => {
  it('reach write-api byte for byte whatever parser the route declares (money: exact JSON numbers)', async () => {
    const text = '{ "amount": 9223372036854775807,\n  "note": "spaces kept" }';
    const res = await gateway.http('/v1/parsers/echo', { method: 'POST', headers: json('tenant-a'), body: text });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ contentType: 'application/json', received: { text } });
    const csv = await gateway.http('/v1/parsers/echo', {
      method: 'POST',
      headers: { ...json('tenant-a'), 'content-type': 'text/csv' },
      body: 'a,b\n1,2\n',
    });
    expect(await csv.json()).toEqual({ contentType: 'text/csv', received: { text: 'a,b\n1,2\n' } });
  });

  it("are still refused at the gateway when the route's parser refuses them", async () => {
    const res = await gateway.http('/v1/parsers/echo', {
      method: 'POST',
      headers: json('tenant-a'),
      body: '{"amount": 1,',
    });
    expect(res.status).toBe(400);
  });

  it('carry every money mutation: open, credit, transfer', async () => {
    const c = moneyClient(gateway.url, `tenant-money-${randomUUID()}`, 'u-admin', { members: writeApi.kernel.db });
    const a = await c.openWallet('alice');
    const b = await c.openWallet('bob');
    const credit = await c.post(`/wallets/${a}/credit`, { amount: 500, currency: 'USD' });
    expect(credit.status, credit.text).toBe(200);
    const transfer = await c.post('/transfers', { fromWalletId: a, toWalletId: b, amount: 200, currency: 'USD' });
    expect(transfer.status, transfer.text).toBe(200);
    expect((await c.get(`/wallets/${b}/balance`)).body).toEqual({ available: 200, pending: 0, frozen: 0 });
  });
});

describe('a public route that reads a token itself', () => {
  it("gets the client's token through the gateway, and verifies it with its own authenticator", async () => {
    expect(await (await gateway.http('/v1/parsers/who', { headers: json('tenant-a') })).json()).toEqual({
      userId: 'user-1',
    });
    expect(await (await gateway.http('/v1/parsers/who')).json()).toEqual({ userId: null });
    expect((await gateway.http('/v1/parsers/who', { headers: { authorization: 'Bearer forged' } })).status).toBe(401);
  });
});

describe("the gateway's health report in split deployment", () => {
  it('lists write-api and read-api with their latency', async () => {
    const res = await gateway.http('/health', {
      headers: { authorization: `Bearer ${testToken('tenant-a', 'owner', ['platform.*'])}` },
    });
    expect(res.status).toBe(200);
    const report = (await res.json()) as { components: Record<string, { status: string; latencyMs: number | null }> };
    expect(report.components['write-api']).toMatchObject({ status: 'healthy', latencyMs: expect.any(Number) });
    expect(report.components['read-api']).toMatchObject({ status: 'healthy', latencyMs: expect.any(Number) });
    expect(report.components.postgresql).toMatchObject({ status: 'healthy', latencyMs: expect.any(Number) });
  });
});

describe('write-api and read-api reached directly', () => {
  it('refuse a client token: they trust only the gateway', async () => {
    const res = await writeApi.http('/v1/tally/counters', {
      method: 'POST',
      headers: json('tenant-a'),
      body: JSON.stringify({ id: 'direct', name: 'd' }),
    });
    expect(res.status).toBe(401);
    expect((await readApi.http('/v1/tally/counters', { headers: json('tenant-a') })).status).toBe(401);
  });

  it('refuse a forged principal header', async () => {
    const forged = Buffer.from(
      JSON.stringify({
        u: 'x',
        t: 'tenant-a',
        e: 'x@x',
        r: ['Owner'],
        p: ['platform.*'],
        v: true,
        iat: Date.now(),
        tr: 'x',
      }),
    ).toString('base64url');
    const res = await readApi.http('/v1/tally/counters', {
      headers: { 'x-platform-principal': forged, 'x-platform-signature': 'AAAA' },
    });
    expect(res.status).toBe(401);
  });
});
