import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../infra/config';
import type { ServiceModules } from '../../infra/modules';
import { mergeModules } from '../../infra/modules';
import { silentLogger } from '../../infra/observability/logger';
import type { Clock } from '../../infra/runtime/clock';
import type { RunningPlatform } from '../../infra/runtime/platform';
import { startPlatform } from '../../infra/runtime/platform';
import identityProjections from '../../projections/identity';
import identityRead from '../../read-api/identity';
import identityWrite from '../../write-api/identity';
import { identity } from '../../commands/identity/runtime';
import type { TestDatabase } from './db';
import { createTestDatabase } from './db';
import type { SmtpCapture } from './smtp-capture';
import { startSmtpCapture } from './smtp-capture';
import { tallyRead, tallyWrite } from './tally/routes';
import tally from './tally/projections';

/** real time plus an offset the test moves forward: tokens and windows expire without sleeping */
export const offsetClock = (): Clock & { advance(ms: number): void; reset(): void } => {
  let offset = 0;
  return { now: () => new Date(Date.now() + offset), advance: (ms) => { offset += ms; }, reset: () => { offset = 0; } };
};

export interface IdentityPlatform extends RunningPlatform {
  database: TestDatabase;
  smtp: SmtpCapture;
  clock: ReturnType<typeof offsetClock>;
  /** fetch relative to the server's /v1; bodies are inspected loosely in tests */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  api(path: string, init?: { method?: string; token?: string; body?: unknown; headers?: Record<string, string> }): Promise<{ status: number; body: any; headers: Headers }>;
  close(): Promise<void>;
}

/** A platform with the real identity service (real tokens, real authenticator), its own database and an SMTP capture. */
export const startIdentityPlatform = async (options: { env?: Record<string, string>; extra?: Partial<ServiceModules> } = {}): Promise<IdentityPlatform> => {
  const database = await createTestDatabase('id');
  const smtp = await startSmtpCapture();
  const clock = offsetClock();
  const config = loadConfig({
    PORT: '0', PLATFORM_ENV: 'test', LOG_LEVEL: 'silent', DATABASE_URL: database.url, DATA_DIR: join(tmpdir(), `platform-test-${process.pid}`), SMTP_URL: smtp.url,
    // the gateway's limits are tested by the gateway; identity tests make hundreds of calls from one address
    RATE_LIMIT_ANONYMOUS_PER_MIN: '1000000', RATE_LIMIT_USER_PER_MIN: '1000000', RATE_LIMIT_ADMIN_PER_MIN: '1000000', RATE_LIMIT_TENANT_PER_MIN: '1000000',
    RECOVERY_ATTEMPTS_PER_ADDRESS: '1000000',
    ...options.env,
  });
  const modules = mergeModules({ write: [identityWrite, tallyWrite], read: [identityRead, tallyRead], projections: [...identityProjections.projections, ...tally.projections] }, options.extra ?? {});
  const running = await startPlatform({ role: 'all', config, logger: silentLogger(), modules, clock });
  const address = running.app.server.address();
  const url = typeof address === 'object' && address ? `http://127.0.0.1:${address.port}` : running.url;
  return {
    ...running, url, database, smtp, clock,
    api: async (path, init = {}) => {
      const headers: Record<string, string> = { ...(init.headers ?? {}) };
      if (init.token) headers.authorization = `Bearer ${init.token}`;
      if (init.body !== undefined) headers['content-type'] = 'application/json';
      const res = await fetch(`${url}/v1${path}`, { method: init.method ?? (init.body === undefined ? 'GET' : 'POST'), headers, body: init.body === undefined ? undefined : JSON.stringify(init.body) });
      const text = await res.text();
      let body: unknown = text;
      try { body = text ? JSON.parse(text) : null; } catch { /* not JSON */ }
      return { status: res.status, body, headers: res.headers };
    },
    close: async () => {
      await running.stop();
      await smtp.close();
      await database.drop();
    },
  };
};

export const PASSWORD = 'correct horse battery staple 42';
let counter = 0;
export const uniqueEmail = (prefix = 'user') => `${prefix}-${process.pid}-${Date.now().toString(36)}-${(counter += 1)}@example.test`;

export interface Registered { email: string; userId: string; tenantId: string; accessToken: string; refreshToken: string }

export const registerUser = async (p: IdentityPlatform, o: { email?: string; tenantName?: string } = {}): Promise<Registered> => {
  const email = o.email ?? uniqueEmail();
  const res = await p.api('/auth/register', { body: { email, password: PASSWORD, firstName: 'Ada', lastName: 'Lovelace', ...(o.tenantName ? { tenantName: o.tenantName } : {}) } });
  if (res.status !== 201) throw new Error(`register failed: ${res.status} ${JSON.stringify(res.body)}`);
  return { email, userId: res.body.user.id, tenantId: res.body.tenant.id, accessToken: res.body.accessToken, refreshToken: res.body.refreshToken };
};

/** the token a mail carries in its X-Platform-Token header */
export const mailToken = async (p: IdentityPlatform, to: string, purpose: string, after = 0): Promise<string> => {
  const mail = await p.smtp.waitFor((m) => p.smtp.messages.indexOf(m) >= after && m.envelope.to.includes(to) && m.parsed.headers.get('x-platform-purpose') === purpose);
  return String(mail.parsed.headers.get('x-platform-token'));
};

export const grace = (p: IdentityPlatform) => identity(p.kernel).graceMs;

export interface Member { email: string; userId: string; accessToken: string; refreshToken: string }

/**
 * A new member of the inviter's tenant, the way a person joins one: POST /users (an invitation),
 * the invitation mail, then accept-invite with a name and a password.
 */
export const addMember = async (p: IdentityPlatform, inviter: { accessToken: string }, o: { email?: string; roles?: string[]; role_ids?: string[]; name?: string } = {}): Promise<Member> => {
  const email = o.email ?? uniqueEmail('member');
  const before = p.smtp.messages.length;
  const roleRequest = o.roles || o.role_ids ? { roles: o.roles, role_ids: o.role_ids } : { roles: [await anyRole(p, inviter)] };
  const invited = await p.api('/users', { token: inviter.accessToken, body: { email, ...roleRequest } });
  if (invited.status !== 202) throw new Error(`POST /users failed: ${invited.status} ${JSON.stringify(invited.body)}`);
  const token = await mailToken(p, email, 'invite', before);
  const accepted = await p.api('/auth/accept-invite', { body: { token, name: o.name ?? 'Grace Hopper', password: PASSWORD } });
  if (accepted.status !== 201) throw new Error(`accept-invite failed: ${accepted.status} ${JSON.stringify(accepted.body)}`);
  return { email, userId: accepted.body.user.id, accessToken: accepted.body.access_token, refreshToken: accepted.body.refresh_token };
};

/** a role a new member may be given without granting anything: a role with no permissions, made once per tenant */
const anyRole = async (p: IdentityPlatform, inviter: { accessToken: string }): Promise<string> => {
  const name = 'Member';
  const created = await p.api('/rbac/roles', { token: inviter.accessToken, body: { name, description: 'no permissions', permissions: [] } });
  if (created.status !== 201 && created.status !== 409) throw new Error(`creating the Member role failed: ${created.status} ${JSON.stringify(created.body)}`);
  return name;
};
