import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { purgeExpiredIdentityTokens } from '../../../commands/identity/maintenance';
import type { TestDatabase } from '../../support/db';
import { createTestDatabase } from '../../support/db';

let t: TestDatabase;
const now = new Date('2026-11-22T12:00:00Z');
const at = (hours: number) => new Date(now.getTime() + hours * 3600_000);

beforeAll(async () => {
  t = await createTestDatabase('idpurge');
  for (const [hash, expires] of [
    ['ott-expired', at(-1)],
    ['ott-live', at(1)],
  ] as const) {
    await t.db.query(
      `INSERT INTO identity.one_time_tokens (token_hash, purpose, expires_at) VALUES ($1, 'reset', $2)`,
      [hash, expires],
    );
  }
  for (const [hash, expires] of [
    ['rt-long-gone', at(-25)],
    ['rt-just-expired', at(-1)],
    ['rt-live', at(24)],
  ] as const) {
    await t.db.query(
      `INSERT INTO identity.refresh_tokens (token_hash, family_id, user_id, tenant_id, issued_at, expires_at) VALUES ($1, 'f', 'u', 't', $2, $3)`,
      [hash, at(-200), expires],
    );
  }
});
afterAll(async () => t.drop());

describe('identity tokens past their expiry', () => {
  it('are purged: one-time tokens at once, refresh tokens a day after their absolute expiry', async () => {
    expect(await purgeExpiredIdentityTokens(t.db, now)).toEqual({ oneTime: 1, refresh: 1 });
    const oneTime = (await t.db.query('SELECT token_hash FROM identity.one_time_tokens ORDER BY 1')).rows.map(
      (r) => r.token_hash,
    );
    const refresh = (await t.db.query('SELECT token_hash FROM identity.refresh_tokens ORDER BY 1')).rows.map(
      (r) => r.token_hash,
    );
    expect(oneTime).toEqual(['ott-live']);
    expect(refresh).toEqual(['rt-just-expired', 'rt-live']);
  });
});
