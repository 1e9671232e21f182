/**
 * The delivery rate limits (spec 002: 100 per minute per tenant, 50 per minute per module): a
 * fixed one-minute window per scope, opened by the first message it admits. A message over a limit
 * is not refused — it stays queued and is admitted in a later window (delayed, never dropped).
 */
export interface RateWindow {
  /** epoch ms the window opened */
  start: number;
  used: number;
}

export interface RateCandidate {
  id: string;
  /** the scopes the message counts against (tenant, module); none for exempt messages */
  scopes: readonly { key: string; limit: number }[];
}

export const WINDOW_MS = 60_000;

const current = (w: RateWindow | undefined, now: number): RateWindow =>
  !w || now >= w.start + WINDOW_MS ? { start: now, used: 0 } : w;

/**
 * Admits candidates in the order given (priority, then age) while every scope they count against
 * has room. Returns the admitted ids and the windows after admission (only scopes it touched).
 */
export const admit = (
  candidates: readonly RateCandidate[],
  windows: ReadonlyMap<string, RateWindow>,
  now: number,
): { admitted: string[]; windows: Map<string, RateWindow> } => {
  const next = new Map<string, RateWindow>();
  const windowOf = (key: string) => next.get(key) ?? current(windows.get(key), now);
  const admitted: string[] = [];
  for (const c of candidates) {
    if (c.scopes.some((s) => windowOf(s.key).used >= s.limit)) continue;
    for (const s of c.scopes) {
      const w = windowOf(s.key);
      next.set(s.key, { start: w.start, used: w.used + 1 });
    }
    admitted.push(c.id);
  }
  return { admitted, windows: next };
};

/** the scopes a message counts against */
export const rateScopes = (
  m: { tenantId: string; module: string | null; rateLimited: boolean },
  limits: { perTenant: number; perModule: number },
): RateCandidate['scopes'] =>
  !m.rateLimited
    ? []
    : [
        { key: `t:${m.tenantId}`, limit: limits.perTenant },
        ...(m.module ? [{ key: `m:${m.tenantId}:${m.module}`, limit: limits.perModule }] : []),
      ];
