import { describe, expect, it } from 'vitest';
import { rateScopes } from '../../../domain/notify/rate';
import type { RateWindow } from '../../../infra/queue';
import { admit, WINDOW_MS } from '../../../infra/queue';

const limits = { perTenant: 100, perModule: 50 };
const candidates = (
  n: number,
  m: { tenantId?: string; module?: string | null; rateLimited?: boolean } = {},
  prefix = 'n',
) =>
  Array.from({ length: n }, (_, i) => ({
    id: `${prefix}${i}`,
    scopes: rateScopes(
      { tenantId: m.tenantId ?? 't1', module: m.module ?? null, rateLimited: m.rateLimited ?? true },
      limits,
    ),
  }));

describe('the tenant window (100 per minute)', () => {
  it('admits 100 of 150 at once, in order, and none of the rest', () => {
    const { admitted, windows } = admit(candidates(150), new Map(), 0);
    expect(admitted).toEqual(candidates(100).map((c) => c.id));
    expect(windows.get('t:t1')).toEqual({ start: 0, used: 100 });
  });
  it('admits the next 100 a minute after the window opened, not before', () => {
    const full = new Map<string, RateWindow>([['t:t1', { start: 1_000, used: 100 }]]);
    expect(admit(candidates(50), full, 1_000 + WINDOW_MS - 1).admitted).toEqual([]);
    expect(admit(candidates(50), full, 1_000 + WINDOW_MS).admitted).toHaveLength(50);
  });
  it('counts tenants apart', () => {
    const { admitted } = admit(
      [
        ...candidates(100, { tenantId: 'a' }, 'a'),
        ...candidates(100, { tenantId: 'b' }, 'b'),
        ...candidates(1, { tenantId: 'a' }, 'late'),
      ],
      new Map(),
      0,
    );
    expect(admitted).toHaveLength(200);
    expect(admitted).not.toContain('late0');
  });
  it("does not count messages exempt from the limits (the platform's own mails)", () =>
    expect(admit(candidates(500, { rateLimited: false }), new Map(), 0).admitted).toHaveLength(500));
});

describe('the module window (50 per minute within the tenant)', () => {
  it("admits 50 of one module, and the tenant's other messages up to 100", () => {
    const { admitted } = admit(
      [...candidates(80, { module: 'billing' }, 'b'), ...candidates(80, {}, 'x')],
      new Map(),
      0,
    );
    expect(admitted.filter((id) => id.startsWith('b'))).toHaveLength(50);
    expect(admitted.filter((id) => id.startsWith('x'))).toHaveLength(50);
  });
  it('does not count a refused message against the tenant', () => {
    const { windows } = admit(candidates(60, { module: 'billing' }), new Map(), 0);
    expect(windows.get('t:t1')?.used).toBe(50);
    expect(windows.get('m:t1:billing')?.used).toBe(50);
  });
});
