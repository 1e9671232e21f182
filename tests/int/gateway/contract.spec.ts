import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPlatformOwner } from '../../../commands/identity/account';
import { NAMESPACES } from '../../../gateway/docs';
import { login } from '../../support/billing-http';
import { crmManifest } from '../../support/data';
import { clamdEnv } from '../../support/files';
import type { IdentityPlatform, Registered } from '../../support/identity';
import { PASSWORD, registerUser, startIdentityPlatform, uniqueEmail } from '../../support/identity';
import { pollUntil } from '../../support/poll';

/**
 * The OpenAPI documents and the server agree, checked from outside on a platform with every
 * service: what the server answers (status, media type, headers) is what the operation documents;
 * a method a path does not document is 405 with Allow naming the documented ones; and the defects
 * the fuzzing found on the server's side — /health for any tenant's Owner, an installation for a
 * tenant that does not exist, a JSON member named __proto__ called invalid JSON — stay fixed.
 */
type Media = Record<string, { schema?: Record<string, unknown> }>;
type Answer = { description?: string; headers?: Record<string, unknown>; content?: Media };
type Operation = { requestBody?: { content: Media }; responses: Record<string, Answer> };
type Document = { paths: Record<string, Record<string, Operation>> };

let p: IdentityPlatform;
let owner: Registered;
let platformOwner: string;
const documents = new Map<string, Document>();

beforeAll(async () => {
  p = await startIdentityPlatform({ services: ['platform'], env: { ...clamdEnv(), FILES_WORKER_POLL_MS: '50' } });
  for (const namespace of NAMESPACES) {
    const res = await fetch(`${p.url}/api/v1/${namespace}/openapi.json`);
    expect(res.status, namespace).toBe(200);
    documents.set(namespace, (await res.json()) as Document);
  }
  owner = await registerUser(p);
  const email = uniqueEmail('platform-owner');
  await createPlatformOwner(p.kernel, { email, password: PASSWORD });
  platformOwner = await login(p, email);
  // four roles with every service start in 90 s and more on a loaded 2-core machine
}, 400_000);
afterAll(async () => {
  await p?.close();
});

const operation = (namespace: string, method: string, path: string): Operation => {
  const op = documents.get(namespace)?.paths[path]?.[method.toLowerCase()];
  if (!op) throw new Error(`${namespace} documents no ${method} ${path}`);
  return op;
};

/** a media type the answer's Content-Type falls under: exact (parameters aside), type/*, or * / * */
const mediaMatches = (documented: string, received: string): boolean => {
  const type = received.split(';')[0]!.trim().toLowerCase();
  return documented === type || documented === '*/*' || documented === `${type.split('/')[0]}/*`;
};

/**
 * The answer is documented for the operation: its status, the media type of a body, and the
 * headers named; an answer without a body (no Content-Type) needs only its status.
 */
const expectDocumented = async (
  namespace: string,
  method: string,
  path: string,
  res: Response,
  headers: string[] = [],
): Promise<void> => {
  const at = `${namespace} ${method} ${path} → ${res.status}`;
  const answer = operation(namespace, method, path).responses[String(res.status)];
  expect(answer, `${at} is not documented`).toBeDefined();
  const type = res.headers.get('content-type');
  if (type === null) expect(await res.clone().text(), `${at} has a body without a Content-Type`).toBe('');
  else
    expect(
      Object.keys(answer!.content ?? {}).some((m) => mediaMatches(m, type)),
      `${at}: ${type} is not among ${Object.keys(answer!.content ?? {}).join(', ') || 'no media type'}`,
    ).toBe(true);
  for (const name of headers) {
    expect(res.headers.get(name), `${at} sends ${name}`).not.toBeNull();
    expect(
      Object.keys(answer!.headers ?? {}).map((h) => h.toLowerCase()),
      `${at} documents ${name}`,
    ).toContain(name.toLowerCase());
  }
};

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

const upload = async (text: string): Promise<Response> => {
  const form = new FormData();
  form.append('bucket', 'documents');
  form.append('originalName', 'notes.txt');
  form.append('mimeType', 'text/plain');
  form.append('file', new Blob([text]), 'notes.txt');
  return fetch(`${p.url}/v1/files/upload`, { method: 'POST', headers: bearer(owner.accessToken), body: form });
};

const fileStatus = async (id: string): Promise<string> => {
  const res = await fetch(`${p.url}/v1/files/${id}?meta=1`, { headers: bearer(owner.accessToken) });
  return res.status === 200 ? ((await res.json()) as { status: string }).status : `http ${res.status}`;
};

describe('an upload and its downloads', () => {
  let fileId: string;
  const text = 'The documents say what the server does.\n';

  it('documents the multipart body of POST /v1/files/upload and its 201', async () => {
    const form = operation('files', 'POST', '/v1/files/upload').requestBody?.content['multipart/form-data']?.schema;
    expect(form).toMatchObject({
      required: expect.arrayContaining(['bucket', 'originalName', 'file']),
      properties: {
        file: { type: 'string', format: 'binary' },
        bucket: { enum: expect.arrayContaining(['documents']) },
      },
    });
    const res = await upload(text);
    expect(res.status, await res.clone().text()).toBe(201);
    await expectDocumented('files', 'POST', '/v1/files/upload', res);
    fileId = ((await res.json()) as { id: string }).id;
    await pollUntil(
      () => fileStatus(fileId),
      (s) => s === 'available',
      { timeoutMs: 60_000, what: 'the upload to be scanned and released' },
    );
  });

  it('documents a download of the whole file, of a byte range (206, Content-Range) and a range beyond the end (416)', async () => {
    const path = '/v1/files/{id}';
    const whole = await fetch(`${p.url}/v1/files/${fileId}?download=1`, { headers: bearer(owner.accessToken) });
    expect(whole.status).toBe(200);
    expect(await whole.clone().text()).toBe(text);
    await expectDocumented('files', 'GET', path, whole, ['Content-Disposition', 'Accept-Ranges']);

    const part = await fetch(`${p.url}/v1/files/${fileId}?download=1`, {
      headers: { ...bearer(owner.accessToken), range: 'bytes=4-12' },
    });
    expect(part.status).toBe(206);
    expect(await part.clone().text()).toBe(text.slice(4, 13));
    await expectDocumented('files', 'GET', path, part, ['Content-Range', 'Content-Length']);

    const beyond = await fetch(`${p.url}/v1/files/${fileId}?download=1`, {
      headers: { ...bearer(owner.accessToken), range: 'bytes=5000-' },
    });
    expect(beyond.status).toBe(416);
    await expectDocumented('files', 'GET', path, beyond, ['Content-Range']);
  });

  it('documents the 302 to a signed link (Location) and the bytes behind it', async () => {
    const redirect = await fetch(`${p.url}/v1/files/${fileId}`, {
      headers: bearer(owner.accessToken),
      redirect: 'manual',
    });
    expect(redirect.status).toBe(302);
    await expectDocumented('files', 'GET', '/v1/files/{id}', redirect, ['Location']);
    const link = new URL(redirect.headers.get('location')!, p.url);
    const content = await fetch(`${p.url}${link.pathname}${link.search}`, { headers: { range: 'bytes=0-3' } });
    expect(content.status).toBe(206);
    await expectDocumented('files', 'GET', '/v1/files/{id}/content', content, ['Content-Range']);
  });

  it('documents the presigned form posted to /v1/objects/local (multipart) and its 204', async () => {
    const presign = await fetch(`${p.url}/v1/files/presign`, {
      method: 'POST',
      headers: { ...bearer(owner.accessToken), 'content-type': 'application/json' },
      body: JSON.stringify({ bucket: 'documents', originalName: 'a.txt', mimeType: 'text/plain', sizeBytes: 5 }),
    });
    expect(presign.status).toBe(200);
    await expectDocumented('files', 'POST', '/v1/files/presign', presign);
    const { uploadUrl, fields } = (await presign.json()) as { uploadUrl: string; fields: Record<string, string> };
    const documented = operation('files', 'POST', '/v1/objects/local').requestBody?.content['multipart/form-data'];
    expect(documented?.schema?.required).toEqual(expect.arrayContaining([...Object.keys(fields), 'file']));
    const form = new FormData();
    for (const [name, value] of Object.entries(fields)) form.append(name, value);
    form.append('file', new Blob(['hello']), 'a.txt');
    const stored = await fetch(`${p.url}${new URL(uploadUrl).pathname}`, { method: 'POST', body: form });
    expect(stored.status, await stored.clone().text()).toBe(204);
    await expectDocumented('files', 'POST', '/v1/objects/local', stored);
  });
});

describe('the audit batch', () => {
  const record = { action: 'invoice.payment.captured', entityType: 'invoice', entityId: 'inv-1' };
  const batch = (records: unknown[]) =>
    fetch(`${p.url}/v1/audit/batch`, {
      method: 'POST',
      headers: { ...bearer(owner.accessToken), 'content-type': 'application/json' },
      body: JSON.stringify({ records }),
    });

  it('documents 202 with every record queued and 207 with a problem per refused record', async () => {
    const all = await batch([record, record]);
    expect(all.status).toBe(202);
    await expectDocumented('audit', 'POST', '/v1/audit/batch', all);
    expect(await all.json()).toMatchObject({ succeeded: 2, failed: 0 });
    const some = await batch([record, { action: 'nope' }]);
    expect(some.status).toBe(207);
    await expectDocumented('audit', 'POST', '/v1/audit/batch', some);
    expect(await some.json()).toMatchObject({ succeeded: 1, failed: 1, results: [{ status: 202 }, { status: 400 }] });
  });
});

describe("an invitation of the tenant's own member", () => {
  it('answers 202 without a body, as spec 000 says, and the document has that answer', async () => {
    const res = await fetch(`${p.url}/v1/auth/invite`, {
      method: 'POST',
      headers: { ...bearer(owner.accessToken), 'content-type': 'application/json' },
      body: JSON.stringify({ email: owner.email, roles: ['Owner'] }),
    });
    expect(res.status).toBe(202);
    expect(await res.clone().text()).toBe('');
    await expectDocumented('iam', 'POST', '/v1/auth/invite', res);
    expect(operation('iam', 'POST', '/v1/auth/invite').responses['202']!.description).toMatch(/no body/);
  });
});

describe('/health', () => {
  it("is the platform owner's: a tenant's Owner is refused (403), the platform owner reads it", async () => {
    const tenant = await fetch(`${p.url}/health`, { headers: bearer(owner.accessToken) });
    expect(tenant.status).toBe(403);
    expect(tenant.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    const platform = await fetch(`${p.url}/health`, { headers: bearer(platformOwner) });
    expect([200, 207, 503]).toContain(platform.status);
    expect(((await platform.json()) as { components: Record<string, unknown> }).components.postgresql).toBeDefined();
  });
});

describe('installing a module', () => {
  it('for a tenant that does not exist is 404 naming tenantId, and nothing is installed', async () => {
    const registered = await p.api('/modules', { token: platformOwner, body: await crmManifest() });
    expect(registered.status, JSON.stringify(registered.body)).toBe(201);
    const ghost = randomUUID();
    const res = await p.api('/modules/crm/installations', { token: platformOwner, body: { tenantId: ghost } });
    expect(res.status).toBe(404);
    expect(res.body.errors).toEqual([expect.objectContaining({ field: 'tenantId', code: 'NOT_FOUND' })]);
    const rows = await p.kernel.db.query('SELECT 1 FROM modules.installations WHERE tenant_id = $1', [ghost]);
    expect(rows.rowCount).toBe(0);
    // the tenant that exists gets it
    const real = await p.api('/modules/crm/installations', {
      token: platformOwner,
      body: { tenantId: owner.tenantId },
    });
    expect(real.status, JSON.stringify(real.body)).toBe(201);
  });
});

describe('a JSON member named __proto__', () => {
  const post = (path: string, body: string) =>
    fetch(`${p.url}/v1${path}`, {
      method: 'POST',
      headers: { ...bearer(owner.accessToken), 'content-type': 'application/json' },
      body,
    });

  it('is data: a notification keeps it in meta, as an own member, and answers it back', async () => {
    const sent = await post(
      '/notify',
      '{"channel":"email","recipient":{"address":"proto@example.test"},"subject":"s","body":"b",' +
        '"meta":{"__proto__":{"polluted":true},"order":7}}',
    );
    expect(sent.status, await sent.clone().text()).toBe(202);
    const { notificationId } = (await sent.json()) as { notificationId: string };
    const shown = await pollUntil(
      async () => {
        const res = await fetch(`${p.url}/v1/notify/${notificationId}`, { headers: bearer(owner.accessToken) });
        return res.status === 200 ? await res.text() : null;
      },
      (text) => text !== null,
      { timeoutMs: 20_000, what: 'the notification in the history' },
    );
    const meta = (JSON.parse(shown!) as { meta: Record<string, unknown> }).meta;
    // jsonb keeps members in an order of its own
    expect(Object.keys(meta).sort()).toEqual(['__proto__', 'order']);
    expect(Object.getOwnPropertyDescriptor(meta, '__proto__')?.value).toEqual({ polluted: true });
    expect(Object.getPrototypeOf(meta)).toBe(Object.prototype);
  });

  it('is accepted in an audit record (202), not called invalid JSON', async () => {
    const res = await post(
      '/audit',
      '{"action":"invoice.payment.captured","entityType":"invoice","entityId":"i-2","meta":{"__proto__":{"a":1}}}',
    );
    expect(res.status, await res.clone().text()).toBe(202);
  });
});

describe('a path of the documents asked with a method it does not list', () => {
  const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
  /** a concrete path for a documented one: each {parameter} a value no static segment has */
  const concrete = (path: string) => path.replace(/\{[^}]+\}/g, 'x1');

  it('answers 405 with Allow equal to the documented methods, in all nine namespaces', async () => {
    const wrong: string[] = [];
    let asked = 0;
    for (const [namespace, doc] of documents) {
      for (const [path, operations] of Object.entries(doc.paths)) {
        const documented = METHODS.filter((m) => m.toLowerCase() in operations);
        for (const method of METHODS.filter((m) => !documented.includes(m))) {
          asked += 1;
          const res = await fetch(`${p.url}${concrete(path)}`, { method });
          const body = (await res.json()) as { type?: string };
          const allow = res.headers.get('allow');
          if (res.status !== 405 || allow !== documented.join(', ') || !body.type?.endsWith('/method-not-allowed'))
            wrong.push(`${namespace} ${method} ${path}: ${res.status} Allow: ${allow} ${body.type ?? ''}`);
        }
      }
    }
    expect(asked).toBeGreaterThan(200);
    expect(wrong).toEqual([]);
  });

  it.each([
    ['GET', '/v1/files/upload', 'POST'],
    ['GET', '/v1/files/presign', 'POST'],
    ['GET', '/v1/notify/batch', 'POST'],
    ['GET', '/v1/events/dlq/replay-all', 'POST'],
    ['DELETE', '/v1/files/usage', 'GET'],
    ['HEAD', '/v1/files/upload', 'POST'],
  ])('%s %s, which a route with an id also matches, is 405 with Allow: %s', async (method, path, allow) => {
    const res = await fetch(`${p.url}${path}`, { method, headers: bearer(owner.accessToken) });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe(allow);
  });

  it('still routes a path whose segment is a parameter value (an unknown file id: 404)', async () => {
    const res = await fetch(`${p.url}/v1/files/${randomUUID()}`, { headers: bearer(owner.accessToken) });
    expect(res.status).toBe(404);
  });
});
