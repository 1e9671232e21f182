import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuditClient, Body } from '../../support/audit';
import { AUDIT_PERMISSIONS, auditClient, eventually, parseCsv } from '../../support/audit';
import type { TestPlatform } from '../../support/platform';
import { startTestPlatform } from '../../support/platform';

/**
 * The audit API over HTTP (spec 002, Audit; issue 11): written with the shared factories so the
 * split-topology run can take it as it is.
 */
let platform: TestPlatform;
let a: AuditClient;
let b: AuditClient;
const tenantA = `tenant-a-${randomUUID()}`;
const tenantB = `tenant-b-${randomUUID()}`;

beforeAll(async () => {
  platform = await startTestPlatform({ services: ['tally', 'audit'] });
  a = auditClient(platform.url, tenantA, 'user-a');
  b = auditClient(platform.url, tenantB, 'user-b');
});
afterAll(async () => platform?.close());

const record = (over: Record<string, unknown> = {}) => ({
  action: 'invoice.payment.captured',
  entityType: 'invoice',
  entityId: `inv-${randomUUID()}`,
  after: { amount: 100 },
  ...over,
});

/** posts a record and waits until GET /audit/:id finds it */
const stored = async (
  client: AuditClient,
  body: Record<string, unknown>,
  headers: Record<string, string> = {},
): Promise<Body> => {
  const posted = await client.call('POST', '/audit', body, headers);
  expect(posted.status).toBe(202);
  return eventually(async () => {
    const got = await client.call('GET', `/audit/${posted.body.auditId}`);
    return got.status === 200 ? got.body : null;
  });
};

const list = async (client: AuditClient, query: string): Promise<Body[]> => {
  const res = await client.call('GET', `/audit?${query}`);
  expect(res.status).toBe(200);
  return res.body.data;
};

describe('POST /audit', () => {
  it('answers 202 queued with the id and time, and stores the actor fields of the request, not of the body', async () => {
    const forged = {
      actorId: 'someone-else',
      actorIp: '6.6.6.6',
      actorUserAgent: 'forged',
      tenantId: tenantB,
      timestamp: '2001-01-01T00:00:00.000Z',
      traceId: 'forged-trace',
    };
    const posted = await a.call('POST', '/audit', record({ entityId: 'inv-actor', ...forged }), {
      'user-agent': 'billing-module/2.1',
    });
    expect(posted.status).toBe(202);
    expect(posted.body).toEqual({
      auditId: expect.stringMatching(/^[0-9a-f-]{36}$/),
      status: 'queued',
      createdAt: expect.any(String),
    });
    const got = await eventually(async () => {
      const r = await a.call('GET', `/audit/${posted.body.auditId}`);
      return r.status === 200 ? r.body : null;
    });
    expect(got).toMatchObject({
      id: posted.body.auditId,
      action: 'invoice.payment.captured',
      entityType: 'invoice',
      entityId: 'inv-actor',
      after: { amount: 100 },
      before: null,
      actorId: 'user-a',
      actorIp: '127.0.0.1',
      actorUserAgent: 'billing-module/2.1',
      tenantId: tenantA,
      timestamp: posted.body.createdAt,
    });
    expect(got.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(got.traceId).not.toBe('forged-trace');
    expect((await b.call('GET', `/audit/${posted.body.auditId}`)).status).toBe(404);
  });

  it('refuses an action that is not domain.entity.verb, and audit.* actions, with a validation problem', async () => {
    for (const action of ['login', 'Invoice.Paid.x', 'audit.user.anonymized']) {
      const res = await a.call('POST', '/audit', record({ action }));
      expect(res.status).toBe(400);
      expect(res.body.type).toMatch(/\/validation-error$/);
      expect(res.body.errors[0].field).toBe('action');
    }
  });

  it('answers 404 audit-record-not-found for an unknown id', async () => {
    const res = await a.call('GET', `/audit/${randomUUID()}`);
    expect(res.status).toBe(404);
    expect(res.body.type).toMatch(/\/audit-record-not-found$/);
  });
});

describe('POST /audit/batch', () => {
  it('refuses 501 records with 400 batch-limit-exceeded and queues nothing', async () => {
    const entityId = `batch-${randomUUID()}`;
    const res = await a.call('POST', '/audit/batch', {
      records: Array.from({ length: 501 }, () => record({ entityId })),
    });
    expect(res.status).toBe(400);
    expect(res.body.type).toMatch(/\/batch-limit-exceeded$/);
    // deliberately let time pass: the refused batch must leave nothing behind (an absence)
    await new Promise((r) => setTimeout(r, 500));
    expect(await list(a, `entityId=${entityId}`)).toEqual([]);
  });

  it('queues 500 records: 202 with one result per record', async () => {
    const entityId = `batch-${randomUUID()}`;
    const res = await a.call('POST', '/audit/batch', {
      records: Array.from({ length: 500 }, (_, i) => record({ entityId, after: { i } })),
    });
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({ succeeded: 500, failed: 0 });
    expect(res.body.results[499]).toMatchObject({
      index: 499,
      status: 202,
      data: { auditId: expect.any(String), status: 'queued' },
    });
    await eventually(
      async () =>
        (await a.call('GET', `/audit/entity-history?entityType=invoice&entityId=${entityId}&page_size=100`)).body.data
          .length === 100,
    );
  });

  it('answers 207 when some records are invalid, queuing the valid ones', async () => {
    const res = await a.call('POST', '/audit/batch', { records: [record(), { action: 'x' }, record()] });
    expect(res.status).toBe(207);
    expect(res.body).toMatchObject({ succeeded: 2, failed: 1 });
    expect(res.body.results[1]).toMatchObject({
      index: 1,
      status: 400,
      problem: { type: expect.stringMatching(/\/validation-error$/), instance: '/v1/audit/batch#/items/1' },
    });
  });
});

describe('GET /audit filters', () => {
  const entity = `filters-${randomUUID()}`;
  const posted: Body[] = [];

  beforeAll(async () => {
    for (const action of ['shop.order.placed', 'shop.order.shipped', 'shop.refund.issued', 'stock.item.moved']) {
      posted.push(await stored(a, record({ action, entityType: 'order', entityId: entity })));
      await new Promise((r) => setTimeout(r, 5)); // distinct timestamps for the bounds
    }
  });

  it('matches an action exactly', async () => {
    expect((await list(a, `entityId=${entity}&action=shop.order.placed`)).map((r) => r.action)).toEqual([
      'shop.order.placed',
    ]);
  });

  it('matches an action prefix, newest first', async () => {
    expect((await list(a, `entityId=${entity}&action=shop.*`)).map((r) => r.action)).toEqual([
      'shop.refund.issued',
      'shop.order.shipped',
      'shop.order.placed',
    ]);
    expect((await list(a, `entityId=${entity}&action=shop.order.*`)).map((r) => r.action)).toEqual([
      'shop.order.shipped',
      'shop.order.placed',
    ]);
  });

  it('takes since as inclusive and until as exclusive', async () => {
    const since = posted[1].timestamp;
    const until = posted[3].timestamp;
    const rows = await list(
      a,
      `entityId=${entity}&since=${encodeURIComponent(since)}&until=${encodeURIComponent(until)}`,
    );
    expect(rows.map((r) => r.action)).toEqual(['shop.refund.issued', 'shop.order.shipped']);
  });

  it('filters by actor and entity type', async () => {
    expect(await list(a, `entityId=${entity}&actorId=nobody`)).toEqual([]);
    expect((await list(a, `entityId=${entity}&actorId=user-a&entityType=order`)).length).toBe(4);
  });

  it('gives the entity history oldest first', async () => {
    const res = await a.call('GET', `/audit/entity-history?entityType=order&entityId=${entity}`);
    expect(res.body.data.map((r: Body) => r.action)).toEqual([
      'shop.order.placed',
      'shop.order.shipped',
      'shop.refund.issued',
      'stock.item.moved',
    ]);
  });

  it('refuses a malformed action filter and page token', async () => {
    expect((await a.call('GET', '/audit?action=shop.*.x')).status).toBe(400);
    expect((await a.call('GET', '/audit?page_token=garbage')).status).toBe(400);
  });
});

describe('paging', () => {
  it('is stable while records keep arriving: every record that existed is seen once', async () => {
    const entityType = `paging-${randomUUID().slice(0, 8)}`;
    const first = await a.call('POST', '/audit/batch', {
      records: Array.from({ length: 45 }, (_, i) => record({ entityType, entityId: `e-${i}` })),
    });
    const existing = new Set<string>(first.body.results.map((r: Body) => r.data.auditId));
    await eventually(async () => (await list(a, `entityType=${entityType}&page_size=100`)).length === 45);
    let stop = false;
    const writer = (async () => {
      while (!stop) {
        await a.call('POST', '/audit', record({ entityType, entityId: 'late' }));
        // the writer's pace: records keep arriving while the pages are read
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    const seen: string[] = [];
    let token: string | undefined;
    try {
      do {
        const res = await a.call(
          'GET',
          `/audit?entityType=${entityType}&page_size=10${token ? `&page_token=${token}` : ''}`,
        );
        expect(res.status).toBe(200);
        seen.push(...res.body.data.map((r: Body) => r.id));
        token = res.body.next_page_token;
        // the reader's pace: later records land between pages
        await new Promise((r) => setTimeout(r, 30));
      } while (token);
    } finally {
      stop = true;
      await writer;
    }
    expect(new Set(seen).size).toBe(seen.length);
    for (const id of existing) expect(seen).toContain(id);
  });
});

describe('GET /audit/export', () => {
  const entityType = `export-${randomUUID().slice(0, 8)}`;
  let since: string;
  let until: string;

  beforeAll(async () => {
    since = new Date(Date.now() - 60_000).toISOString();
    const tricky = { note: 'comma, "quote" and\nnewline', nested: { list: [1, 'two'] } };
    await a.call('POST', '/audit/batch', {
      records: Array.from({ length: 30 }, (_, i) =>
        record({ entityType, entityId: `x-${i}`, before: i % 2 ? tricky : undefined, meta: { i } }),
      ),
    });
    await eventually(async () => (await list(a, `entityType=${entityType}&page_size=100`)).length === 30);
    // a closed range: the exports' own API-call records fall after it, and what came before has landed
    until = new Date().toISOString();
    // deliberately let the clock pass `until`, so no later record (the exports' own API calls) falls inside the range
    await new Promise((r) => setTimeout(r, 1000));
  });

  const exported = async (client: AuditClient, format: 'json' | 'csv') => {
    const res = await client.call(
      'GET',
      `/audit/export?format=${format}&since=${encodeURIComponent(since)}&until=${encodeURIComponent(until)}`,
    );
    expect(res.status).toBe(200);
    return res;
  };

  it('streams JSON as an attachment', async () => {
    const res = await exported(a, 'json');
    expect(res.headers.get('content-disposition')).toMatch(/^attachment; filename="audit-.*\.json"$/);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    const mine = (res.body as Body[]).filter((r) => r.entityType === entityType);
    expect(mine).toHaveLength(30);
    expect((res.body as Body[]).every((r) => r.tenantId === tenantA)).toBe(true);
  });

  it('writes CSV that parses to the same records as the JSON export', async () => {
    const json = (await exported(a, 'json')).body as Body[];
    const csv = await exported(a, 'csv');
    expect(csv.headers.get('content-type')).toMatch(/^text\/csv/);
    expect(csv.headers.get('content-disposition')).toMatch(/\.csv"$/);
    const [header, ...rows] = parseCsv(csv.text);
    const objects = new Set(['before', 'after', 'meta']);
    const nullable = new Set(['actorIp', 'actorUserAgent', 'traceId']);
    const fromCsv = rows.map((cells) =>
      Object.fromEntries(
        header!.map((name, i) => {
          const cell = cells[i] ?? '';
          if (objects.has(name)) return [name, cell === '' ? null : JSON.parse(cell)];
          return [name, cell === '' && nullable.has(name) ? null : cell];
        }),
      ),
    );
    expect(fromCsv).toEqual(json.map((r) => Object.fromEntries(header!.map((name) => [name, r[name]]))));
    expect(fromCsv.filter((r) => r.entityType === entityType)).toHaveLength(30);
  });

  it('refuses a hot range over 90 days with 400 export-range-too-large', async () => {
    const from = new Date(Date.now() - 86_400_000).toISOString();
    const to = new Date(Date.now() + 91 * 86_400_000).toISOString();
    const res = await a.call('GET', `/audit/export?since=${encodeURIComponent(from)}&until=${encodeURIComponent(to)}`);
    expect(res.status).toBe(400);
    expect(res.body.type).toMatch(/\/export-range-too-large$/);
  });

  it('answers a range reaching into cold storage with 202 and a job whose status and file are readable', async () => {
    const from = new Date(Date.now() - 200 * 86_400_000).toISOString();
    const res = await a.call(
      'GET',
      `/audit/export?format=json&since=${encodeURIComponent(from)}&until=${encodeURIComponent(until)}`,
    );
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({ jobId: expect.any(String), status: 'queued', code: 'cold-export-initiated' });
    expect(res.headers.get('location')).toBe(`/v1/audit/export/jobs/${res.body.jobId}`);
    expect((await b.call('GET', `/audit/export/jobs/${res.body.jobId}`)).status).toBe(404);
    const done = await eventually(async () => {
      const job = await a.call('GET', `/audit/export/jobs/${res.body.jobId}`);
      return job.body.status === 'completed' ? job.body : null;
    }, 20_000);
    const file = await a.call('GET', `/audit/export/jobs/${res.body.jobId}/file`);
    expect(file.status).toBe(200);
    expect(file.headers.get('content-disposition')).toMatch(/^attachment/);
    expect((file.body as Body[]).filter((r) => r.entityType === entityType)).toHaveLength(30);
    expect(done.records).toBe((file.body as Body[]).length);
    expect((await b.call('GET', `/audit/export/jobs/${res.body.jobId}/file`)).status).toBe(404);
  });

  it('requires audit.export', async () => {
    const reader = auditClient(platform.url, tenantA, 'reader', ['audit.read']);
    expect(
      (await reader.call('GET', `/audit/export?since=${encodeURIComponent(since)}&until=${encodeURIComponent(until)}`))
        .status,
    ).toBe(403);
  });
});

describe('tenant isolation', () => {
  it('never shows tenant A records to tenant B through any endpoint or export', async () => {
    const mine = await stored(a, record({ entityType: 'secret', entityId: 'shared-name' }));
    await stored(b, record({ entityType: 'secret', entityId: 'shared-name' }));
    const since = encodeURIComponent(new Date(Date.now() - 60_000).toISOString());
    const until = encodeURIComponent(new Date(Date.now() + 60_000).toISOString());
    expect((await b.call('GET', `/audit/${mine.id}`)).status).toBe(404);
    const pages = [
      (await b.call('GET', '/audit?page_size=100')).body.data,
      (await b.call('GET', `/audit?entityId=shared-name&tenantId=${tenantA}`)).body.data, // only the platform owner may name a tenant
      (await b.call('GET', '/audit/entity-history?entityType=secret&entityId=shared-name')).body.data,
      (await b.call('GET', `/audit/export?since=${since}&until=${until}`)).body,
    ];
    for (const rows of pages) {
      expect(rows.length).toBeGreaterThan(0);
      expect(rows.every((r: Body) => r.tenantId === tenantB)).toBe(true);
      expect(rows.map((r: Body) => r.id)).not.toContain(mine.id);
    }
  });

  it('lets the platform owner read one tenant explicitly', async () => {
    const mine = await stored(a, record({ entityType: 'owner-view', entityId: 'x' }));
    const owner = auditClient(platform.url, 'platform-tenant', 'owner', ['platform.*']);
    const rows = (await owner.call('GET', `/audit?tenantId=${tenantA}&entityType=owner-view`)).body.data;
    expect(rows.map((r: Body) => r.id)).toEqual([mine.id]);
    expect((await owner.call('GET', `/audit/${mine.id}?tenantId=${tenantA}`)).status).toBe(200);
    expect((await owner.call('GET', `/audit/${mine.id}`)).status).toBe(404);
  });

  it('requires audit.read to list', async () => {
    const writer = auditClient(platform.url, tenantA, 'writer', []);
    expect((await writer.call('GET', '/audit')).status).toBe(403);
    expect((await writer.call('POST', '/audit', record())).status).toBe(202);
    expect(AUDIT_PERMISSIONS).toContain('audit.read');
  });
});

describe('the OpenAPI namespace audit', () => {
  it('documents the audit endpoints', async () => {
    const doc = (await (await platform.http('/api/v1/audit/openapi.json')).json()) as {
      paths: Record<string, unknown>;
    };
    expect(Object.keys(doc.paths).sort()).toEqual([
      '/v1/audit',
      '/v1/audit/anonymize',
      '/v1/audit/batch',
      '/v1/audit/entity-history',
      '/v1/audit/export',
      '/v1/audit/export/jobs/{jobId}',
      '/v1/audit/export/jobs/{jobId}/file',
      '/v1/audit/{id}',
    ]);
  });
});

describe('the financial rule of anonymization', () => {
  it('answers 403 anonymize-financial-record when only money.* records name the user', async () => {
    const payee = `payee-${randomUUID()}`;
    await stored(a, record({ action: 'money.payout.sent', entityType: 'user', entityId: payee }));
    const res = await a.call('POST', '/audit/anonymize', { userId: payee });
    expect(res.status).toBe(403);
    expect(res.body.type).toMatch(/\/anonymize-financial-record$/);
  });

  it('answers 404 for a user the tenant does not know', async () => {
    const res = await a.call('POST', '/audit/anonymize', { userId: `ghost-${randomUUID()}` });
    expect(res.status).toBe(404);
  });
});
