/**
 * The delivery rate limits (spec 002: 100 per minute per tenant, 50 per minute per module): the
 * scopes a message counts against. The windows themselves (fixed one-minute windows shared by
 * every worker, over a limit delayed, never dropped) are the kernel queue's (infra/queue.ts).
 */
export const rateScopes = (
  m: { tenantId: string; module: string | null; rateLimited: boolean },
  limits: { perTenant: number; perModule: number },
): { key: string; limit: number }[] =>
  !m.rateLimited
    ? []
    : [
        { key: `t:${m.tenantId}`, limit: limits.perTenant },
        ...(m.module ? [{ key: `m:${m.tenantId}:${m.module}`, limit: limits.perModule }] : []),
      ];
