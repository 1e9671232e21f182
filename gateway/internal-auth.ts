import { createHmac, timingSafeEqual } from 'node:crypto';
import { commonErrors } from '../domain/shared/errors';
import type { Principal } from '../infra/http/auth';

/**
 * Split deployment: the gateway authenticates the caller and forwards the verified principal to
 * write-api and read-api in a header signed with a key derived from PLATFORM_SECRET_KEY (HMAC-SHA256).
 * The upstream roles accept nothing else: a client's bearer token or a forged header sent to them
 * directly is a 401, so they trust only the gateway (spec 000: services behind it trust the
 * gateway). The signature covers the issue time and trace id; a header older than 60 s is refused.
 */
export const PRINCIPAL_HEADER = 'x-platform-principal';
export const SIGNATURE_HEADER = 'x-platform-signature';
export const INTERNAL_KEY_PURPOSE = 'gateway.internal-principal.v1';
const MAX_AGE_MS = 60_000;

interface Wire {
  u: string;
  t: string;
  e: string;
  r: readonly string[];
  p: string[];
  v: boolean;
  i?: string;
  /** a module's slug and id (module keys) */
  s?: string;
  m?: string;
  /** issued at, epoch ms */
  iat: number;
  tr: string;
}

const sign = (key: Buffer, payload: string) => createHmac('sha256', key).update(payload).digest('base64url');

export const signPrincipal = (
  key: Buffer,
  principal: Principal,
  traceId: string,
  now: number,
): Record<string, string> => {
  const wire: Wire = {
    u: principal.userId,
    t: principal.tenantId,
    e: principal.email,
    r: principal.roles,
    p: [...principal.permissions],
    v: principal.emailVerified,
    ...(principal.impersonatorId ? { i: principal.impersonatorId } : {}),
    ...(principal.source ? { s: principal.source } : {}),
    ...(principal.moduleId ? { m: principal.moduleId } : {}),
    iat: now,
    tr: traceId,
  };
  const payload = Buffer.from(JSON.stringify(wire)).toString('base64url');
  return { [PRINCIPAL_HEADER]: payload, [SIGNATURE_HEADER]: sign(key, payload) };
};

/** the principal the gateway forwarded, or null when the request carries none; throws 401 on a bad one */
export const verifyPrincipal = (
  key: Buffer,
  headers: Record<string, string | string[] | undefined>,
  traceId: string,
  now: number,
): Principal | null => {
  const payload = headers[PRINCIPAL_HEADER];
  const signature = headers[SIGNATURE_HEADER];
  if (payload === undefined && signature === undefined) return null;
  if (typeof payload !== 'string' || typeof signature !== 'string') throw commonErrors.unauthorized();
  const expected = Buffer.from(sign(key, payload));
  const given = Buffer.from(signature);
  if (expected.length !== given.length || !timingSafeEqual(expected, given)) throw commonErrors.unauthorized();
  const wire = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Wire;
  if (Math.abs(now - wire.iat) > MAX_AGE_MS || wire.tr !== traceId) throw commonErrors.unauthorized();
  return {
    userId: wire.u,
    tenantId: wire.t,
    email: wire.e,
    roles: wire.r,
    permissions: new Set(wire.p),
    emailVerified: wire.v,
    ...(wire.i ? { impersonatorId: wire.i } : {}),
    ...(wire.s ? { source: wire.s } : {}),
    ...(wire.m ? { moduleId: wire.m } : {}),
  };
};
