import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../infra/config';
import type { Kernel } from '../../infra/kernel';
import { silentLogger } from '../../infra/observability/logger';
import { startPlatform } from '../../app/platform';
import { identityRuntime as identity } from '../../projections/identity/shared/runtime';
import type { TestClock } from './clock';
import { offsetClock } from './clock';
import type { TestDatabase } from './db';
import { createTestDatabase } from './db';
import type { TestServiceName } from './services';
import { loadTestServices } from './services';
import type { SmtpCapture } from './smtp-capture';
import { startSmtpCapture } from './smtp-capture';
import { startSplitPlatform } from './split';
import { SPLIT } from './topology';

export { offsetClock } from './clock';

export interface IdentityPlatform {
  /** the process's kernel (all-in-one), or a control kernel beside the split roles (tests/support/split.ts) */
  kernel: Kernel;
  url: string;
  topology: 'all' | 'split';
  database: TestDatabase;
  smtp: SmtpCapture;
  clock: TestClock;
  /** fetch relative to the server's /v1; bodies are inspected loosely in tests */
  api(
    path: string,
    init?: { method?: string; token?: string; body?: unknown; headers?: Record<string, string> },
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
  ): Promise<{ status: number; body: any; headers: Headers }>;
  close(): Promise<void>;
}

/** the identity service (real tokens, real authenticator) and the sample tally context */
const MODULES: readonly TestServiceName[] = ['identity', 'tally'];

/**
 * A platform with the real identity service, its own database and an SMTP capture: one process,
 * or in the split run (PLATFORM_TEST_TOPOLOGY=split) gateway, write-api, read-api and workers as
 * separate processes sharing the clock and the SMTP capture (tests/support/split.ts).
 */
export const startIdentityPlatform = async (
  options: {
    env?: Record<string, string>;
    services?: readonly TestServiceName[];
    /** the platform's clock (default: real time plus an offset the test moves) */
    clock?: TestClock;
  } = {},
): Promise<IdentityPlatform> => {
  const smtp = await startSmtpCapture();
  const clock = options.clock ?? offsetClock();
  const env = {
    SMTP_URL: smtp.url,
    // the gateway's limits are tested by the gateway; identity tests make hundreds of calls from one address
    RATE_LIMIT_ANONYMOUS_PER_MIN: '1000000',
    RATE_LIMIT_USER_PER_MIN: '1000000',
    RATE_LIMIT_ADMIN_PER_MIN: '1000000',
    RATE_LIMIT_MODULE_PER_MIN: '1000000',
    RATE_LIMIT_TENANT_PER_MIN: '1000000',
    RECOVERY_ATTEMPTS_PER_ADDRESS: '1000000',
    ...options.env,
  };
  const services = options.services ?? MODULES;
  const started = SPLIT ? await split(env, clock, services) : await allInOne(env, clock, services);
  return {
    ...started,
    smtp,
    clock,
    api: async (path, init = {}) => {
      const headers: Record<string, string> = { ...(init.headers ?? {}) };
      if (init.token) headers.authorization = `Bearer ${init.token}`;
      if (init.body !== undefined) headers['content-type'] = 'application/json';
      const res = await fetch(`${started.url}/v1${path}`, {
        method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
        headers,
        body: init.body === undefined ? undefined : JSON.stringify(init.body),
      });
      const text = await res.text();
      let body: unknown = text;
      try {
        body = text ? JSON.parse(text) : null;
      } catch {
        /* not JSON */
      }
      return { status: res.status, body, headers: res.headers };
    },
    close: async () => {
      await started.stop();
      await smtp.close();
    },
  };
};

type Started = Pick<IdentityPlatform, 'kernel' | 'url' | 'topology' | 'database'> & { stop(): Promise<void> };

const allInOne = async (
  env: Record<string, string>,
  clock: TestClock,
  services: readonly TestServiceName[],
): Promise<Started> => {
  const database = await createTestDatabase('id');
  const config = loadConfig({
    PORT: '0',
    PLATFORM_ENV: 'test',
    LOG_LEVEL: 'silent',
    DATABASE_URL: database.url,
    DATA_DIR: join(tmpdir(), `platform-test-${process.pid}`),
    ...env,
  });
  const running = await startPlatform({
    role: 'all',
    config,
    logger: silentLogger(),
    services: await loadTestServices(services),
    clock,
  });
  const address = running.app.server.address();
  const url = typeof address === 'object' && address ? `http://127.0.0.1:${address.port}` : running.url;
  return {
    kernel: running.kernel,
    url,
    topology: 'all',
    database,
    stop: async () => {
      await running.stop();
      await database.drop();
    },
  };
};

const split = async (
  env: Record<string, string>,
  clock: TestClock,
  services: readonly TestServiceName[],
): Promise<Started> => {
  const platform = await startSplitPlatform({ services, auth: 'identity', env, clock });
  return {
    kernel: platform.kernel,
    url: platform.url,
    topology: 'split',
    database: platform.database,
    stop: platform.stop,
  };
};

export const PASSWORD = 'correct horse battery staple 42';
let counter = 0;
export const uniqueEmail = (prefix = 'user') =>
  `${prefix}-${process.pid}-${Date.now().toString(36)}-${(counter += 1)}@example.test`;

export interface Registered {
  email: string;
  userId: string;
  tenantId: string;
  accessToken: string;
  refreshToken: string;
}

export const registerUser = async (
  p: IdentityPlatform,
  o: { email?: string; tenantName?: string } = {},
): Promise<Registered> => {
  const email = o.email ?? uniqueEmail();
  const res = await p.api('/auth/register', {
    body: {
      email,
      password: PASSWORD,
      firstName: 'Ada',
      lastName: 'Lovelace',
      ...(o.tenantName ? { tenantName: o.tenantName } : {}),
    },
  });
  if (res.status !== 201) throw new Error(`register failed: ${res.status} ${JSON.stringify(res.body)}`);
  return {
    email,
    userId: res.body.user.id,
    tenantId: res.body.tenant.id,
    accessToken: res.body.accessToken,
    refreshToken: res.body.refreshToken,
  };
};

/** the token a mail carries in its X-Platform-Token header */
export const mailToken = async (p: IdentityPlatform, to: string, purpose: string, after = 0): Promise<string> => {
  const mail = await p.smtp.waitFor(
    (m) =>
      p.smtp.messages.indexOf(m) >= after &&
      m.envelope.to.includes(to) &&
      m.parsed.headers.get('x-platform-purpose') === purpose,
  );
  return mail.parsed.headers.get('x-platform-token') as string;
};

export const grace = (p: IdentityPlatform) => identity(p.kernel).graceMs;

export interface Member {
  email: string;
  userId: string;
  accessToken: string;
  refreshToken: string;
}

/**
 * A new member of the inviter's tenant, the way a person joins one: POST /users (an invitation),
 * the invitation mail, then accept-invite with a name and a password.
 */
export const addMember = async (
  p: IdentityPlatform,
  inviter: { accessToken: string },
  o: { email?: string; roles?: string[]; role_ids?: string[]; name?: string } = {},
): Promise<Member> => {
  const email = o.email ?? uniqueEmail('member');
  const before = p.smtp.messages.length;
  const roleRequest =
    o.roles || o.role_ids ? { roles: o.roles, role_ids: o.role_ids } : { roles: [await anyRole(p, inviter)] };
  const invited = await p.api('/users', { token: inviter.accessToken, body: { email, ...roleRequest } });
  if (invited.status !== 202) throw new Error(`POST /users failed: ${invited.status} ${JSON.stringify(invited.body)}`);
  const token = await mailToken(p, email, 'invite', before);
  const accepted = await p.api('/auth/accept-invite', {
    body: { token, name: o.name ?? 'Grace Hopper', password: PASSWORD },
  });
  if (accepted.status !== 201)
    throw new Error(`accept-invite failed: ${accepted.status} ${JSON.stringify(accepted.body)}`);
  return {
    email,
    userId: accepted.body.user.id,
    accessToken: accepted.body.access_token,
    refreshToken: accepted.body.refresh_token,
  };
};

/** a role a new member may be given without granting anything: a role with no permissions, made once per tenant */
const anyRole = async (p: IdentityPlatform, inviter: { accessToken: string }): Promise<string> => {
  const name = 'Member';
  const created = await p.api('/rbac/roles', {
    token: inviter.accessToken,
    body: { name, description: 'no permissions', permissions: [] },
  });
  if (created.status !== 201 && created.status !== 409)
    throw new Error(`creating the Member role failed: ${created.status} ${JSON.stringify(created.body)}`);
  return name;
};
