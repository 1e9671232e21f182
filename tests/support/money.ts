import { randomUUID } from 'node:crypto';
import type { ServiceModules } from '../../infra/modules';
import { mergeModules } from '../../infra/modules';
import moneyProjections from '../../projections/money';
import moneyRead from '../../read-api/money';
import moneyWrite from '../../write-api/money';
import moneyWorkers from '../../workers/money';
import { testToken } from './auth';

/** the money service's modules, as discovery would find them */
export const moneyModules: ServiceModules = mergeModules({ write: [moneyWrite], read: [moneyRead], projections: moneyProjections.projections, workers: [moneyWorkers] });

export const MONEY_PERMISSIONS = ['money.wallets.read', 'money.wallets.write', 'money.transactions.read', 'money.transactions.write', 'money.transactions.reverse'];

/** a parsed response body: tests read whatever fields they check */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- response bodies are checked field by field
export type Body = any;

export interface MoneyClient {
  token: string;
  call(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<{ status: number; body: Body; headers: Headers; text: string }>;
  /** a mutation with a fresh Idempotency-Key (or the given one) */
  post(path: string, body?: unknown, key?: string): Promise<{ status: number; body: Body; headers: Headers; text: string }>;
  get(path: string): Promise<{ status: number; body: Body; headers: Headers; text: string }>;
  openWallet(userId: string, currency?: string): Promise<string>;
}

/** an HTTP client of the money API as one user of one tenant */
export const moneyClient = (baseUrl: string, tenantId: string, userId = 'u-admin', options: { permissions?: string[]; emailVerified?: boolean } = {}): MoneyClient => {
  const token = testToken(tenantId, userId, options.permissions ?? MONEY_PERMISSIONS, options.emailVerified === undefined ? {} : { emailVerified: options.emailVerified });
  const call: MoneyClient['call'] = async (method, path, body, headers = {}) => {
    const res = await fetch(`${baseUrl}/v1${path}`, {
      method, headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await res.text();
    let parsed: unknown;
    try { parsed = text ? JSON.parse(text) : null; } catch { parsed = text; }
    return { status: res.status, body: parsed, headers: res.headers, text };
  };
  const client: MoneyClient = {
    token,
    call,
    post: (path, body, key = randomUUID()) => call('POST', path, body ?? {}, { 'idempotency-key': key }),
    get: (path) => call('GET', path),
    openWallet: async (user, currency = 'USD') => {
      const res = await client.post('/wallets', { userId: user, currency, label: `${user} ${currency}` });
      if (res.status !== 201) throw new Error(`open wallet: ${res.status} ${res.text}`);
      return res.body.id as string;
    },
  };
  return client;
};
