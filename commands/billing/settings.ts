import { isIP } from 'node:net';
import { z } from 'zod';
import { ConfigError } from '../../infra/config';

/** a Go-style duration (15m, 1h, 90s, 1h30m) or a number of seconds */
const parseDurationMs = (v: string): number | null => {
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  const m = /^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$/.exec(v);
  if (!m || v === '') return null;
  return (Number(m[1] ?? 0) * 3600 + Number(m[2] ?? 0) * 60 + Number(m[3] ?? 0)) * 1000;
};

const int = (def: number, min: number, max: number) =>
  z.coerce.number({ error: `expected a whole number from ${min} to ${max}` }).int(`expected a whole number from ${min} to ${max}`).min(min, `expected a whole number from ${min} to ${max}`).max(max, `expected a whole number from ${min} to ${max}`).default(def);

const Schema = z.object({
  BILLING_ENABLED: z.enum(['true', 'false'], { error: 'expected true or false' }).default('true'),
  BILLING_TRIAL_DAYS: int(14, 0, 365),
  BILLING_LIMIT_CACHE_TTL_SEC: int(300, 1, 86_400),
  BILLING_CACHE_TTL: z.string().default('15m').refine((v) => { const ms = parseDurationMs(v); return ms !== null && ms >= 1000 && ms <= 86_400_000; }, 'expected a duration from 1s to 24h such as 15m'),
  BILLING_ESCALATION_INTERVAL_SEC: int(60, 1, 3600),
  BILLING_WEBHOOK_TOLERANCE_SEC: int(300, 1, 3600),
  STRIPE_WEBHOOK_SECRET: z.string().min(1).optional(),
  PADDLE_WEBHOOK_SECRET: z.string().min(1).optional(),
  GRPC_HOST: z.string().min(1).default('127.0.0.1'),
  GRPC_PORT: int(50051, 0, 65535).optional(),
  GRPC_TLS_CERT: z.string().min(1).optional(),
  GRPC_TLS_KEY: z.string().min(1).optional(),
  GRPC_TLS_CA: z.string().min(1).optional(),
  /** split deployment: where the gateway reaches billing's gRPC (default: the host of WRITE_API_URL, GRPC_PORT) */
  BILLING_GRPC_TARGET: z.string().regex(/^[^\s:]+:\d{1,5}$/, 'expected host:port such as write-api:50051').optional(),
}).superRefine((c, ctx) => {
  const tls = [c.GRPC_TLS_CERT, c.GRPC_TLS_KEY, c.GRPC_TLS_CA].filter(Boolean).length;
  if (tls !== 0 && tls !== 3) ctx.addIssue({ code: 'custom', path: ['GRPC_TLS_CERT'], message: 'GRPC_TLS_CERT, GRPC_TLS_KEY and GRPC_TLS_CA are set together (mutual TLS), or none of them' });
  if (tls === 0 && !isLoopback(c.GRPC_HOST)) {
    ctx.addIssue({ code: 'custom', path: ['GRPC_HOST'], message: 'gRPC without TLS listens on loopback only; set GRPC_TLS_CERT, GRPC_TLS_KEY and GRPC_TLS_CA (mutual TLS) to listen elsewhere' });
  }
});

const isLoopback = (host: string): boolean => host === 'localhost' || host === '::1' || (isIP(host) === 4 && host.startsWith('127.'));

export interface BillingSettings {
  enabled: boolean;
  trialDays: number;
  limitCacheTtlMs: number;
  planInfoTtlMs: number;
  escalationIntervalMs: number;
  webhookToleranceSec: number;
  webhookSecrets: { stripe?: string; paddle?: string };
  grpc: { host: string; port: number; tls: { cert: string; key: string; ca: string } | null; target?: string };
}

/**
 * The billing variables, read once per process; a bad value stops the start with one line per
 * variable (ConfigError). PLATFORM_ENV=test defaults GRPC_PORT to 0 (any free port), so test
 * processes never compete for 50051.
 */
export const loadBillingSettings = (env: NodeJS.ProcessEnv = process.env): BillingSettings => {
  const relevant = Object.fromEntries(Object.entries(env).filter(([k, v]) => /^(BILLING_|GRPC_(HOST|PORT|TLS_)|STRIPE_|PADDLE_)/.test(k) && v !== ''));
  const parsed = Schema.safeParse(relevant);
  if (!parsed.success) {
    const seen = new Set<string>();
    throw new ConfigError(parsed.error.issues.filter((i) => !seen.has(String(i.path[0])) && seen.add(String(i.path[0])))
      .map((i) => `${String(i.path[0])}: ${i.message}`));
  }
  const s = parsed.data;
  return {
    enabled: s.BILLING_ENABLED === 'true',
    trialDays: s.BILLING_TRIAL_DAYS,
    limitCacheTtlMs: s.BILLING_LIMIT_CACHE_TTL_SEC * 1000,
    planInfoTtlMs: parseDurationMs(s.BILLING_CACHE_TTL)!,
    escalationIntervalMs: s.BILLING_ESCALATION_INTERVAL_SEC * 1000,
    webhookToleranceSec: s.BILLING_WEBHOOK_TOLERANCE_SEC,
    webhookSecrets: { stripe: s.STRIPE_WEBHOOK_SECRET, paddle: s.PADDLE_WEBHOOK_SECRET },
    grpc: {
      host: s.GRPC_HOST,
      port: s.GRPC_PORT ?? (env.PLATFORM_ENV === 'test' ? 0 : 50051),
      tls: s.GRPC_TLS_CERT && s.GRPC_TLS_KEY && s.GRPC_TLS_CA ? { cert: s.GRPC_TLS_CERT, key: s.GRPC_TLS_KEY, ca: s.GRPC_TLS_CA } : null,
      target: s.BILLING_GRPC_TARGET,
    },
  };
};
