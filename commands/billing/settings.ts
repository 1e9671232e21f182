import type { Config } from '../../infra/config';

/** a Go-style duration (15m, 1h, 90s, 1h30m) or a number of seconds, already checked by the configuration */
const durationMs = (v: string): number => {
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  const m = /^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$/.exec(v);
  return (Number(m?.[1] ?? 0) * 3600 + Number(m?.[2] ?? 0) * 60 + Number(m?.[3] ?? 0)) * 1000;
};

export interface BillingSettings {
  enabled: boolean;
  trialDays: number;
  limitCacheTtlMs: number;
  planInfoTtlMs: number;
  escalationIntervalMs: number;
  webhookToleranceSec: number;
  webhookSecrets: { stripe?: string; paddle?: string };
  grpc: {
    host: string;
    port: number;
    tls: { cert: string; key: string; ca: string } | null;
    /** where a gateway proxying to write-api asks billing (null: no such gateway in this configuration) */
    target: string | null;
  };
}

/**
 * Billing's variables (validated with the rest of the configuration, infra/config.ts). Under
 * PLATFORM_ENV=test GRPC_PORT defaults to 0 (any free port), so test processes never compete for 50051.
 */
export const billingSettingsOf = (c: Config): BillingSettings => {
  const port = c.GRPC_PORT ?? (c.PLATFORM_ENV === 'test' ? 0 : 50051);
  return {
    enabled: c.BILLING_ENABLED === 'true',
    trialDays: c.BILLING_TRIAL_DAYS,
    limitCacheTtlMs: c.BILLING_LIMIT_CACHE_TTL_SEC * 1000,
    planInfoTtlMs: Math.max(1000, durationMs(c.BILLING_CACHE_TTL)),
    escalationIntervalMs: c.BILLING_ESCALATION_INTERVAL_SEC * 1000,
    webhookToleranceSec: c.BILLING_WEBHOOK_TOLERANCE_SEC,
    webhookSecrets: { stripe: c.STRIPE_WEBHOOK_SECRET, paddle: c.PADDLE_WEBHOOK_SECRET },
    grpc: {
      host: c.GRPC_HOST,
      port,
      tls:
        c.GRPC_TLS_CERT && c.GRPC_TLS_KEY && c.GRPC_TLS_CA
          ? { cert: c.GRPC_TLS_CERT, key: c.GRPC_TLS_KEY, ca: c.GRPC_TLS_CA }
          : null,
      // write-api's own port by default: the roles of one deployment share their configuration
      target: c.WRITE_API_URL
        ? (c.BILLING_GRPC_TARGET ?? `${new URL(c.WRITE_API_URL).hostname}:${port || 50051}`)
        : null,
    },
  };
};
