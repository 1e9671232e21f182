import { describe, expect, it } from 'vitest';
import { assertSuspensionDeclared } from '../../../gateway/services';

/*
 * A suspended tenant is read-only for its data (spec 001), and only for its data: each mutation a
 * token may call says which it is (config.whileSuspended), so a new route must choose rather than
 * inherit a rule from its method. The edge checks it as routes are registered: a process with an
 * undeclared one does not start.
 */
describe('a route registered on the edge', () => {
  it('is refused when it is a mutation a token may call and does not say what a suspended tenant meets', () => {
    for (const method of ['POST', 'PUT', 'PATCH', 'DELETE'])
      expect(() => assertSuspensionDeclared({ method, url: '/v1/things', config: { access: 'bearer' } })).toThrow(
        /must declare config.whileSuspended/,
      );
    expect(() => assertSuspensionDeclared({ method: ['GET', 'POST'], url: '/v1/things' })).toThrow(
      /GET,POST \/v1\/things/,
    );
  });

  it('passes when the mutation declares it, either way', () => {
    for (const whileSuspended of ['refused', 'allowed'] as const)
      expect(() =>
        assertSuspensionDeclared({ method: 'POST', url: '/v1/things', config: { access: 'bearer', whileSuspended } }),
      ).not.toThrow();
  });

  it('needs nothing from a read or a public route (no tenant to admit)', () => {
    expect(() => assertSuspensionDeclared({ method: 'GET', url: '/v1/things' })).not.toThrow();
    expect(() =>
      assertSuspensionDeclared({ method: 'POST', url: '/v1/login', config: { access: 'public' } }),
    ).not.toThrow();
  });
});
