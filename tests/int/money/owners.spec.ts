import { randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../infra/config';
import { mergeModules } from '../../../infra/modules';
import { silentLogger } from '../../../infra/observability/logger';
import type { RunningPlatform } from '../../../infra/runtime/platform';
import { startPlatform } from '../../../infra/runtime/platform';
import identityProjections from '../../../projections/identity';
import moneyProjections from '../../../projections/money';
import identityRead from '../../../read-api/identity';
import moneyRead from '../../../read-api/money';
import identityWrite from '../../../write-api/identity';
import moneyWrite from '../../../write-api/money';
import type { TestDatabase } from '../../support/db';
import { createTestDatabase } from '../../support/db';
import { PASSWORD, uniqueEmail } from '../../support/identity';

/**
 * A wallet's owner is an active member of the caller's tenant, read from identity's members
 * (real identity: registration, user creation and deletion through its API, real tokens).
 */
let platform: RunningPlatform;
let database: TestDatabase;
let url: string;

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- response bodies are checked field by field
const call = async (method: string, path: string, token: string | null, body?: unknown): Promise<{ status: number; body: any }> => {
  const res = await fetch(`${url}/v1${path}`, {
    method,
    headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body === undefined ? {} : { 'content-type': 'application/json' }), 'idempotency-key': randomUUID() },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
};

const register = async () => {
  const res = await call('POST', '/auth/register', null, { email: uniqueEmail('owner'), password: PASSWORD, firstName: 'Ada', lastName: 'Lovelace' });
  expect(res.status).toBe(201);
  return { userId: res.body.user.id as string, token: res.body.accessToken as string };
};

beforeAll(async () => {
  database = await createTestDatabase('owners');
  const config = loadConfig({
    PORT: '0', PLATFORM_ENV: 'test', LOG_LEVEL: 'silent', DATABASE_URL: database.url, DATA_DIR: join(tmpdir(), `platform-test-${process.pid}`),
    RATE_LIMIT_ANONYMOUS_PER_MIN: '1000000',
  });
  const modules = mergeModules({ write: [identityWrite, moneyWrite], read: [identityRead, moneyRead], projections: [...identityProjections.projections, ...moneyProjections.projections] });
  platform = await startPlatform({ role: 'all', config, logger: silentLogger(), modules });
  const address = platform.app.server.address();
  url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
});
afterAll(async () => {
  await platform?.stop();
  await database?.drop();
});

describe('POST /v1/wallets', () => {
  it('opens a wallet for an active member of the caller\'s tenant', async () => {
    const owner = await register();
    const res = await call('POST', '/wallets', owner.token, { userId: owner.userId, currency: 'USD' });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const member = await call('POST', '/users', owner.token, { email: uniqueEmail('member') });
    expect(member.status).toBe(201);
    expect((await call('POST', '/wallets', owner.token, { userId: member.body.id, currency: 'EUR' })).status).toBe(201);
  });

  it('answers 404 for an unknown user, another tenant\'s user and a deleted member, and opens nothing', async () => {
    const owner = await register();
    const stranger = await register();
    const deleted = await call('POST', '/users', owner.token, { email: uniqueEmail('leaver') });
    expect((await call('DELETE', `/users/${deleted.body.id}`, owner.token)).status).toBe(200);
    for (const userId of [randomUUID(), stranger.userId, deleted.body.id as string]) {
      const res = await call('POST', '/wallets', owner.token, { userId, currency: 'USD' });
      expect(res.status, JSON.stringify(res.body)).toBe(404);
      expect(res.body.type).toMatch(/\/not-found$/);
    }
    expect((await call('GET', '/wallets', owner.token)).body.data).toEqual([]);
  });

  it('refuses a currency that is not an ISO 4217 code with 400 validation-error', async () => {
    const owner = await register();
    for (const currency of ['ZZZ', 'ABC', 'usd']) {
      const res = await call('POST', '/wallets', owner.token, { userId: owner.userId, currency });
      expect(res.status).toBe(400);
      expect(res.body.errors).toEqual([expect.objectContaining({ field: 'currency' })]);
    }
    expect((await call('POST', '/wallets', owner.token, { userId: owner.userId, currency: 'XCG' })).status).toBe(201);
  });
});
