import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPlatformOwner } from '../../../commands/identity/account';
import { login } from '../../support/billing-http';
import { crmManifest } from '../../support/data';
import type { IdentityPlatform, Registered } from '../../support/identity';
import { PASSWORD, registerUser, startIdentityPlatform, uniqueEmail } from '../../support/identity';

/**
 * A module's migration registers its permissions in modules.permissions; every process keeps its
 * registry current with that store (infra/permissions.ts: the permission catalog's epoch), so the
 * change is seen on the next request in every role: in the split run the migration runs in
 * write-api, the permission list is read-api's, and a tenant Owner's access (its built-in role
 * grants every registered permission) is computed by the gateway. Real tokens throughout.
 */
let p: IdentityPlatform;
let platformOwner: string;
let tenantOwner: Registered;

beforeAll(async () => {
  p = await startIdentityPlatform({ services: ['identity', 'data'] });
  const email = uniqueEmail('platform-owner');
  await createPlatformOwner(p.kernel, { email, password: PASSWORD });
  platformOwner = await login(p, email);
  tenantOwner = await registerUser(p);
});
afterAll(async () => {
  await p?.close();
});

describe("a module's permissions, registered by its migration", () => {
  it("are listed and granted to the tenant's Owner on the next request, in whichever process serves it", async () => {
    // given a tenant Owner who has used the API already (its access is cached), and no module
    const listed = async () =>
      (await p.api('/rbac/permissions', { token: tenantOwner.accessToken })).body.data.map(
        (x: { key: string }) => x.key,
      ) as string[];
    expect(await listed()).not.toContain('crm.contacts.read');
    expect((await p.api('/users', { token: tenantOwner.accessToken })).status).toBe(200);

    // when the platform owner registers crm and installs it for the tenant (its migrations run)
    const registered = await p.api('/modules', { token: platformOwner, body: await crmManifest() });
    expect(registered.status, JSON.stringify(registered.body)).toBe(201);
    const installed = await p.api('/modules/crm/installations', {
      token: platformOwner,
      body: { tenantId: tenantOwner.tenantId },
    });
    expect(installed.status, JSON.stringify(installed.body)).toBe(201);

    // then the very next requests see them: listed, and granted to the Owner by the built-in role
    expect(await listed()).toEqual(expect.arrayContaining(['crm.contacts.read', 'crm.contacts.write']));
    const created = await p.api('/data/crm/contacts', { token: tenantOwner.accessToken, body: { name: 'Ada' } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const read = await p.api(`/data/crm/contacts/${created.body.id}`, { token: tenantOwner.accessToken });
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({ name: 'Ada' });
  });
});
