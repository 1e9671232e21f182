import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordInstallation } from '../../../commands/modules/installations';
import type { Body } from '../../support/events';
import { apiClient, moduleClient, ownerClient, registerModule, uniqueSlug, userClient } from '../../support/events';
import type { TestPlatform } from '../../support/platform';
import { startTestPlatform } from '../../support/platform';

/** The module registry and module keys (issue 15): who registers, what a manifest may say, what a key may do. */
describe('the module registry', () => {
  let platform: TestPlatform;
  const tenantA = randomUUID();
  const tenantB = randomUUID();

  beforeAll(async () => {
    platform = await startTestPlatform({ role: 'all', services: ['events'] });
  });
  afterAll(async () => platform?.close());

  it('refuses a manifest publishing outside its domain, a platform slug, a taken slug; only the platform owner registers', async () => {
    const slug = uniqueSlug('reg');
    const foreign = await ownerClient(platform).call('POST', '/modules', {
      slug,
      version: '1.0.0',
      events: { publishes: ['money.wallet.credited'] },
    });
    expect(foreign.status).toBe(400);
    expect(foreign.body.errors.map((e: Body) => e.code)).toContain('FOREIGN_DOMAIN');
    expect((await ownerClient(platform).call('POST', '/modules', { slug: 'billing', version: '1.0.0' })).status).toBe(
      400,
    );
    expect(
      (await userClient(platform, tenantA, ['events.manage']).call('POST', '/modules', { slug, version: '1.0.0' }))
        .status,
    ).toBe(403);
    const registered = await ownerClient(platform).call('POST', '/modules', {
      slug,
      version: '1.0.0',
      events: { publishes: [`${slug}.thing.made`] },
    });
    expect(registered.status).toBe(201);
    expect(registered.body.credentials.key).toMatch(/^pmk_[0-9a-f]{32}\.[A-Za-z0-9_-]{43}$/);
    expect((await ownerClient(platform).call('POST', '/modules', { slug, version: '2.0.0' })).status).toBe(409);
    const keys = await ownerClient(platform).call('GET', `/modules/${slug}/keys`);
    expect(keys.body.data).toHaveLength(1);
    expect(JSON.stringify(keys.body)).not.toContain(registered.body.credentials.key.split('.')[1]);
  });

  it('a key acts only for a tenant the module is installed for; a wrong or revoked key is 401', async () => {
    const slug = uniqueSlug('key');
    const mod = await registerModule(
      platform,
      { slug, version: '1.0.0', events: { publishes: [`${slug}.thing.made`] } },
      [tenantA],
    );
    const publish = { topic: `platform.${slug}.events`, type: `${slug}.thing.made`, payload: {} };
    expect((await moduleClient(platform, mod, tenantA).call('POST', '/events/publish', publish)).status).toBe(202);
    expect((await apiClient(platform.url, mod.key).call('POST', '/events/publish', publish)).status).toBe(202);
    expect((await moduleClient(platform, mod, tenantB).call('POST', '/events/publish', publish)).status).toBe(404);
    // installed for a second tenant: a call must name the one it acts for
    await recordInstallation(platform.kernel.db, mod.id, tenantB, 'active', new Date());
    const unnamed = await apiClient(platform.url, mod.key).call('POST', '/events/publish', publish);
    expect({ status: unnamed.status, field: unnamed.body.errors?.[0]?.field }).toEqual({
      status: 400,
      field: 'X-Module-Tenant',
    });
    expect((await moduleClient(platform, mod, tenantB).call('POST', '/events/publish', publish)).status).toBe(202);
    const [prefix] = mod.key.split('.');
    expect(
      (await apiClient(platform.url, `${prefix}.${'A'.repeat(43)}`).call('POST', '/events/publish', publish)).status,
    ).toBe(401);
    const keys = await ownerClient(platform).call('GET', `/modules/${mod.id}/keys`);
    expect(
      (await ownerClient(platform).call('DELETE', `/modules/${mod.id}/keys/${keys.body.data[0].keyId}`)).status,
    ).toBe(204);
    expect((await moduleClient(platform, mod, tenantA).call('POST', '/events/publish', publish)).status).toBe(401);
  });
});
