import { randomUUID } from 'node:crypto';
import type { ServiceParts } from '../../infra/services';
import { mergeServiceParts } from '../../infra/services';
import { PLATFORM_TENANT_ID } from '../../domain/identity/constants';
import type { Queryable } from '../../infra/postgres/db';
import { identityPeople } from '../../commands/identity/people';
import identityProjections from '../../projections/identity';
import moneyProjections from '../../projections/money';
import moneyRead from '../../read-api/money';
import moneyWrite from '../../write-api/money';
import moneyWorkers from '../../workers/money';
import { testToken } from './auth';

/**
 * the money service's modules, as discovery would find them, with identity's read models: a
 * wallet's owner must be an active member of the tenant (seedMember writes one)
 */
export const moneyServices: ServiceParts = mergeServiceParts({
  write: [moneyWrite],
  read: [moneyRead],
  projections: [...moneyProjections.projections, ...identityProjections.projections],
  people: identityPeople,
  workers: [moneyWorkers],
});

/**
 * Makes userId an active member of the tenant in identity's read models, as identity's inline
 * projections would after registration (money tests run without identity's commands).
 */
export const seedMember = async (
  q: Queryable,
  tenantId: string,
  userId: string,
  status: { member?: string; account?: string } = {},
): Promise<void> => {
  await q.query(
    `INSERT INTO rm.iam_accounts (tenant_id, id, email, first_name, last_name, email_verified, status, created_at, updated_at, version)
    VALUES ($1, $2, $3, 'Test', 'User', true, $4, now(), now(), 1) ON CONFLICT (tenant_id, id) DO UPDATE SET status = EXCLUDED.status`,
    [PLATFORM_TENANT_ID, userId, `${userId}@example.test`, status.account ?? 'active'],
  );
  await q.query(
    `INSERT INTO rm.iam_members (tenant_id, user_id, role_ids, status, created_at, updated_at, version)
    VALUES ($1, $2, '{}', $3, now(), now(), 1) ON CONFLICT (tenant_id, user_id) DO UPDATE SET status = EXCLUDED.status`,
    [tenantId, userId, status.member ?? 'active'],
  );
};

export const MONEY_PERMISSIONS = [
  'money.wallets.read',
  'money.wallets.write',
  'money.transactions.read',
  'money.transactions.write',
  'money.transactions.reverse',
];

/** a parsed response body: tests read whatever fields they check */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- response bodies are checked field by field
export type Body = any;

export interface MoneyClient {
  token: string;
  call(
    method: string,
    path: string,
    body?: unknown,
    headers?: Record<string, string>,
  ): Promise<{ status: number; body: Body; headers: Headers; text: string }>;
  /** a mutation with a fresh Idempotency-Key (or the given one) */
  post(
    path: string,
    body?: unknown,
    key?: string,
  ): Promise<{ status: number; body: Body; headers: Headers; text: string }>;
  get(path: string): Promise<{ status: number; body: Body; headers: Headers; text: string }>;
  /** opens a wallet of userId (made an active member first when the client knows the database) */
  openWallet(userId: string, currency?: string): Promise<string>;
  /** makes userId an active member of the client's tenant */
  member(userId: string): Promise<void>;
}

/** an HTTP client of the money API as one user of one tenant */
export const moneyClient = (
  baseUrl: string,
  tenantId: string,
  userId = 'u-admin',
  options: { permissions?: string[]; emailVerified?: boolean; members?: Queryable } = {},
): MoneyClient => {
  const token = testToken(
    tenantId,
    userId,
    options.permissions ?? MONEY_PERMISSIONS,
    options.emailVerified === undefined ? {} : { emailVerified: options.emailVerified },
  );
  const call: MoneyClient['call'] = async (method, path, body, headers = {}) => {
    const res = await fetch(`${baseUrl}/v1${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...headers,
      },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      parsed = text;
    }
    return { status: res.status, body: parsed, headers: res.headers, text };
  };
  const client: MoneyClient = {
    token,
    call,
    post: (path, body, key = randomUUID()) => call('POST', path, body ?? {}, { 'idempotency-key': key }),
    get: (path) => call('GET', path),
    member: async (user) => {
      if (!options.members) throw new Error('moneyClient: pass options.members (the database) to seed members');
      await seedMember(options.members, tenantId, user);
    },
    openWallet: async (user, currency = 'USD') => {
      if (options.members) await seedMember(options.members, tenantId, user);
      const res = await client.post('/wallets', { userId: user, currency, label: `${user} ${currency}` });
      if (res.status !== 201) throw new Error(`open wallet: ${res.status} ${res.text}`);
      return res.body.id as string;
    },
  };
  return client;
};
