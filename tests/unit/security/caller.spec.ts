import { describe, expect, it } from 'vitest';
import { isDomainError } from '../../../domain/shared/errors';
import type { Principal } from '../../../infra/http/auth';
import { callerOf } from '../../../infra/http/auth';

/** the one accessor routes read their caller through (was `request.principal!`, a TypeError and a 500 when absent) */
describe('the caller of a request', () => {
  it('is the principal the edge set', () => {
    const principal = { userId: 'u1', tenantId: 't1' } as Principal;
    expect(callerOf({ principal })).toBe(principal);
  });
  it('absent, fails as a 401 unauthorized problem', () => {
    let error: unknown;
    try {
      callerOf({});
    } catch (e) {
      error = e;
    }
    expect(isDomainError(error) && { status: error.status, suffix: error.suffix }).toEqual({
      status: 401,
      suffix: 'unauthorized',
    });
  });
});
