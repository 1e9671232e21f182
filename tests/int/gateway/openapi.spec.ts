import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NAMESPACES } from '../../../gateway/docs';
import { loadServices } from '../../../app/services';
import { requireEnv } from '../../support/env';
import type { TestPlatform } from '../../support/platform';
import { startTestPlatform } from '../../support/platform';

/**
 * The OpenAPI documents of a platform with every module, as tools load them: each one passes
 * openapi-spec-validator (PyPI, installed by scripts/test-infra.sh) and says what the API does.
 */
const validator = requireEnv('TEST_OPENAPI_VALIDATOR');
const run = promisify(execFile);

type Schema = { type?: string; format?: string; minimum?: number; maximum?: number; $ref?: string };
type Operation = {
  parameters?: { in: string; name: string; required?: boolean; schema?: Schema | string }[];
  requestBody?: { content: Record<string, { schema: { properties?: Record<string, Schema>; required?: string[] } }> };
  responses: Record<string, { content?: Record<string, { schema: Schema }> }>;
  security?: unknown[];
};
type Document = { paths: Record<string, Record<string, Operation>>; components: { schemas: Record<string, unknown> } };

let platform: TestPlatform;
let dir: string;
const documents = new Map<string, Document>();

beforeAll(async () => {
  platform = await startTestPlatform({ services: await loadServices() });
  dir = await mkdtemp(join(tmpdir(), 'openapi-'));
  for (const namespace of NAMESPACES) {
    const res = await platform.http(`/api/v1/${namespace}/openapi.json`);
    if (res.status === 200) documents.set(namespace, (await res.json()) as Document);
    else {
      // a namespace no installed service serves: a 404 problem, not an empty document
      expect(res.status, namespace).toBe(404);
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    }
  }
});
afterAll(async () => {
  await platform?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const operations = function* (doc: Document) {
  for (const [path, ops] of Object.entries(doc.paths))
    for (const [method, op] of Object.entries(ops)) yield { path, method, op };
};
const problemRef = (op: Operation, status: number) =>
  op.responses[String(status)]?.content?.['application/problem+json']?.schema.$ref;

describe('the OpenAPI documents', () => {
  it('exist for the namespaces the installed services serve', () => {
    expect([...documents.keys()]).toEqual(expect.arrayContaining(['iam', 'money', 'notify', 'gateway']));
  });

  it('each pass openapi-spec-validator', async () => {
    const files = new Map<string, string>();
    for (const [namespace, doc] of documents) {
      files.set(namespace, join(dir, `${namespace}.json`));
      await writeFile(files.get(namespace)!, JSON.stringify(doc));
    }
    // one run of the Python validator for every document: it prints `<file>: OK` for each valid one
    const result = await run(validator, [...files.values()]).catch((error: { stdout?: string; stderr?: string }) => ({
      stdout: `${error.stdout ?? ''}${error.stderr ?? ''}`,
    }));
    for (const [namespace, file] of files) expect(result.stdout, namespace).toContain(`${file}: OK`);
  }, 300_000); // minutes on a 2-core machine under heavy load

  it('document the problem answers of every operation (a Problem schema, referenced)', () => {
    for (const [namespace, doc] of documents) {
      expect(doc.components.schemas.Problem, namespace).toBeDefined();
      for (const { path, method, op } of operations(doc)) {
        const at = `${namespace} ${method} ${path}`;
        for (const status of [400, 500])
          expect(problemRef(op, status), `${at} ${status}`).toBe('#/components/schemas/Problem');
        if (op.security?.length)
          for (const status of [401, 403])
            expect(problemRef(op, status), `${at} ${status}`).toBe('#/components/schemas/Problem');
        if (path.includes('{')) expect(problemRef(op, 404), `${at} 404`).toBe('#/components/schemas/Problem');
        for (const p of op.parameters ?? []) expect(typeof p.schema, `${at} parameter ${p.name}`).toBe('object');
      }
    }
  });

  it('document money: a required Idempotency-Key on every mutation, amount an int64 of at least 1, page_size 1..100, 409 and 429', () => {
    const money = documents.get('money')!;
    for (const { path, method, op } of operations(money)) {
      if (method === 'get') continue;
      expect(
        op.parameters?.find((p) => p.in === 'header' && p.name === 'Idempotency-Key')?.required,
        `${method} ${path}`,
      ).toBe(true);
      expect(problemRef(op, 409), `${method} ${path}`).toBeDefined();
    }
    const credit = money.paths['/v1/wallets/{id}/credit']!.post!;
    const body = credit.requestBody!.content['application/json']!.schema;
    expect(body.properties!.amount).toMatchObject({ type: 'integer', format: 'int64', minimum: 1 });
    expect(body.required).toEqual(expect.arrayContaining(['amount', 'currency']));
    expect(problemRef(money.paths['/v1/wallets/{id}/hold']!.post!, 429)).toBeDefined();
    expect(money.paths['/v1/wallets']!.post!.responses['201']).toBeDefined();
    const pageSize = money.paths['/v1/transactions']!.get!.parameters!.find((p) => p.name === 'page_size')!;
    expect(pageSize.schema).toMatchObject({ type: 'integer', minimum: 1, maximum: 100 });
  });

  it("document iam: real success codes, password bounds as enforced, the invite's role requirement, optional Idempotency-Keys and its own problems", () => {
    const iam = documents.get('iam')!;
    const op = (method: string, path: string) => iam.paths[path]![method]!;
    const codes = (method: string, path: string) =>
      Object.keys(op(method, path).responses).filter((s) => s.startsWith('2'));
    expect(codes('post', '/v1/auth/logout')).toEqual(['204']);
    expect(codes('delete', '/v1/rbac/roles/{id}')).toEqual(['204']);
    for (const path of ['/v1/auth/invite', '/v1/users', '/v1/auth/request-reset', '/v1/auth/request-verify-email'])
      expect(codes('post', path), path).toEqual(['202']);
    const body = (method: string, path: string) =>
      op(method, path).requestBody!.content['application/json']!.schema as {
        properties?: Record<string, Schema & { minLength?: number; maxLength?: number }>;
        anyOf?: unknown[];
      };
    for (const path of ['/v1/auth/register', '/v1/auth/reset-password', '/v1/auth/accept-invite']) {
      expect(body('post', path).properties!.password, path).toMatchObject({
        type: 'string',
        minLength: 12,
        maxLength: 128,
      });
    }
    expect(body('post', '/v1/auth/login').properties!.password).toMatchObject({ minLength: 1, maxLength: 1024 });
    expect(body('post', '/v1/auth/invite').anyOf).toEqual([
      { required: ['role_id'] },
      { required: ['roles'], properties: { roles: { minItems: 1 } } },
    ]);
    for (const [method, path] of [
      ['patch', '/v1/users/{id}'],
      ['delete', '/v1/users/{id}'],
      ['post', '/v1/rbac/roles'],
      ['post', '/v1/rbac/roles/{id}/assign'],
    ] as const) {
      expect(
        op(method, path).parameters?.find((p) => p.in === 'header' && p.name === 'Idempotency-Key')?.required,
        `${method} ${path}`,
      ).toBe(false);
      expect(problemRef(op(method, path), 409), `${method} ${path}`).toBeDefined();
    }
    expect(problemRef(op('post', '/v1/auth/register'), 409)).toBeDefined();
    for (const status of [401, 403]) expect(problemRef(op('post', '/v1/auth/login'), status)).toBeDefined();
  });

  it("document the gateway's /live, /ready and /health", () => {
    expect(Object.keys(documents.get('gateway')!.paths)).toEqual(
      expect.arrayContaining(['/live', '/ready', '/health']),
    );
  });
});
