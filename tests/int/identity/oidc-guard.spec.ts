import { createServer } from 'node:net';
import type { AddressInfo, Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IdentityPlatform } from '../../support/identity';
import { startIdentityPlatform } from '../../support/identity';

/*
 * Requests to an OpenID provider go through the upstream guard (infra/resilience/guard.ts): a
 * provider that fails is answered 503 at once, and after five failures in a row its circuit opens —
 * the platform stops calling it for a while instead of spending a connection and a deadline on
 * every login.
 */
let p: IdentityPlatform;
let server: Server;
let connections = 0;

beforeAll(async () => {
  // a provider that accepts connections and drops them at once
  server = createServer((socket) => {
    connections += 1;
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  p = await startIdentityPlatform({
    env: { OIDC_PROVIDERS: JSON.stringify([{ id: 'down-idp', issuer, clientId: 'c', clientSecret: 's' }]) },
  });
});
afterAll(async () => {
  await p?.close();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

describe('a provider that fails', () => {
  it('answers 503 to each login start, and after five failures stops being called (its circuit is open)', async () => {
    for (let i = 0; i < 5; i += 1) {
      const res = await p.api('/auth/login/down-idp', { method: 'POST' });
      expect(res.status).toBe(503);
      expect(res.body.type).toMatch(/\/service-unavailable$/);
    }
    const reached = connections;
    expect(reached).toBeGreaterThanOrEqual(5);
    const started = performance.now();
    const refused = await p.api('/auth/login/down-idp', { method: 'POST' });
    expect(refused.status).toBe(503);
    expect(performance.now() - started).toBeLessThan(1000);
    expect(connections).toBe(reached);
  });
});
