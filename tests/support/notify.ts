import { randomUUID } from 'node:crypto';
import type { ServiceParts } from '../../infra/services';
import { mergeServiceParts } from '../../infra/services';
import type { Db, Queryable } from '../../infra/postgres/db';
import { identityPeople } from '../../commands/identity/people';
import identityProjections from '../../projections/identity';
import notifyProjections from '../../projections/notify';
import notifyRead from '../../read-api/notify';
import notifyWrite from '../../write-api/notify';
import notifyWorkers from '../../workers/notify';
import { testToken } from './auth';
import { seedMember } from './money';
import { pollUntil } from './poll';

export { seedMember };

/**
 * the notification service's modules, as discovery would find them, with identity's read models
 * (a recipient given by userId must be an active member of the tenant: seedMember writes one)
 */
export const notifyServices: ServiceParts = mergeServiceParts({
  write: [notifyWrite],
  read: [notifyRead],
  projections: [...notifyProjections.projections, ...identityProjections.projections],
  people: identityPeople,
  workers: [notifyWorkers],
});
/** the same without the delivery workers: an HTTP role, or a test that runs the worker steps itself */
export const notifyHttpServices: ServiceParts = { ...notifyServices, workers: [] };

export const NOTIFY_PERMISSIONS = ['notify.send', 'notify.read', 'notify.manage'];

/** a parsed response body: tests read the fields they check */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- response bodies are checked field by field
export type Body = any;
export interface Answer {
  status: number;
  body: Body;
  headers: Headers;
}

export interface NotifyClient {
  token: string;
  call(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<Answer>;
  post(path: string, body?: unknown, headers?: Record<string, string>): Promise<Answer>;
  get(path: string): Promise<Answer>;
}

/** an HTTP client of the notify API as one user of one tenant */
export const notifyClient = (
  baseUrl: string,
  tenantId: string,
  userId = 'u-sender',
  permissions = NOTIFY_PERMISSIONS,
): NotifyClient => {
  const token = testToken(tenantId, userId, permissions);
  const call: NotifyClient['call'] = async (method, path, body, headers = {}) => {
    const res = await fetch(`${baseUrl}/v1${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...headers,
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      /* not JSON */
    }
    return { status: res.status, body: parsed, headers: res.headers };
  };
  return {
    token,
    call,
    post: (path, body, headers) => call('POST', path, body ?? {}, headers),
    get: (path) => call('GET', path),
  };
};

export const idempotent = () => ({ 'idempotency-key': randomUUID() });

/** polls until check() returns a value (not undefined/false), or fails with what it saw last */
export const eventually = async <T>(
  check: () => Promise<T | undefined | false>,
  what: string,
  // the delivery worker's passes on a 2-core machine loaded many times over (15 s was missed at load average 33)
  timeoutMs = 45_000,
): Promise<T> =>
  (await pollUntil(check, (value) => value !== undefined && value !== false, { timeoutMs, everyMs: 25, what })) as T;

/** how many of the tenant's notifications have each status */
export const statusCounts = async (q: Queryable, tenantId: string): Promise<Record<string, number>> => {
  const { rows } = await q.query<{ status: string; n: number }>(
    'SELECT status, count(*)::int AS n FROM rm.notify_notifications WHERE tenant_id = $1 GROUP BY status',
    [tenantId],
  );
  return Object.fromEntries(rows.map((r) => [r.status, r.n]));
};

/** the events of one notification's stream, oldest first */
export const eventsOf = async (db: Db, tenantId: string, id: string): Promise<{ type: string; data: Body }[]> =>
  (
    await db.query<{ type: string; data: Body }>(
      'SELECT type, data FROM es.events WHERE stream_id = $1 ORDER BY stream_version',
      [`notify.notification:${tenantId}:${id}`],
    )
  ).rows;
