import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IdentityPlatform } from '../../support/identity';
import { addMember, registerUser, startIdentityPlatform } from '../../support/identity';

/**
 * A wallet's owner is an active member of the caller's tenant, read from identity's members
 * (real identity: registration, invitations and deletion through its API, real tokens).
 */
let p: IdentityPlatform;

const call = async (
  method: string,
  path: string,
  token: string | null,
  body?: unknown,
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
): Promise<{ status: number; body: any }> =>
  p.api(path, {
    method,
    ...(token ? { token } : {}),
    ...(body === undefined ? {} : { body }),
    headers: { 'idempotency-key': randomUUID() },
  });

const register = async () => {
  const user = await registerUser(p);
  return { userId: user.userId, token: user.accessToken, accessToken: user.accessToken };
};

beforeAll(async () => {
  p = await startIdentityPlatform({ services: ['identity', 'money'] });
});
afterAll(async () => {
  await p?.close();
});

describe('POST /v1/wallets', () => {
  it("opens a wallet for an active member of the caller's tenant", async () => {
    const owner = await register();
    const res = await call('POST', '/wallets', owner.token, { userId: owner.userId, currency: 'USD' });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const member = await addMember(p, owner);
    expect((await call('POST', '/wallets', owner.token, { userId: member.userId, currency: 'EUR' })).status).toBe(201);
  });

  it("answers 404 for an unknown user, another tenant's user and a deleted member, and opens nothing", async () => {
    const owner = await register();
    const stranger = await register();
    const deleted = await addMember(p, owner);
    expect((await call('DELETE', `/users/${deleted.userId}`, owner.token)).status).toBe(200);
    for (const userId of [randomUUID(), stranger.userId, deleted.userId]) {
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
