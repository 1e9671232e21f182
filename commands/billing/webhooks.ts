import { createHmac, timingSafeEqual } from 'node:crypto';
import { billingErrors } from '../../domain/billing/errors';
import type { Provider, ProviderEvent } from '../../domain/billing/webhooks';
import { PROVIDERS, readProviderEvent } from '../../domain/billing/webhooks';
import { isDomainError } from '../../domain/shared/errors';
import type { Kernel } from '../../infra/kernel';
import { systemMeta } from '../../infra/kernel';
import type { BillingContext } from './context';
import type { ProviderCommand } from './handlers';
import { applyProviderCommands } from './handlers';
import { currentSubscription, externalIdHolder, plansByProviderPrices } from './lookups';
import type { UnitOfWork } from '../../infra/eventstore/unit-of-work';
import { pickSql } from '../../infra/queue';

/**
 * Provider webhooks (spec 001 HandleWebhook; rulings: Stripe-Signature t=…,v1=HMAC-SHA256 over
 * "t.rawBody", Paddle-Signature ts=…;h1=HMAC-SHA256 over "ts:rawBody"). Verified over the exact
 * bytes received, in constant time, within a tolerance of the signed time; then stored durably
 * (one row per provider event id) and answered; the worker applies it later, once.
 */
export const SIGNATURE_HEADERS: Record<Provider, string> = { stripe: 'stripe-signature', paddle: 'paddle-signature' };

const hmacHex = (secret: string, payload: Buffer): Buffer => createHmac('sha256', secret).update(payload).digest();

const equalsHex = (expected: Buffer, given: string): boolean => {
  if (!/^[0-9a-f]{64}$/i.test(given)) return false;
  const candidate = Buffer.from(given, 'hex');
  return candidate.length === expected.length && timingSafeEqual(candidate, expected);
};

/** the header's parts: Stripe separates them with commas, Paddle with semicolons; a key may repeat (several v1 during a secret roll) */
const partsOf = (header: string, separator: string): Map<string, string[]> => {
  const parts = new Map<string, string[]>();
  for (const item of header.split(separator)) {
    const at = item.indexOf('=');
    if (at <= 0) continue;
    const key = item.slice(0, at).trim();
    parts.set(key, [...(parts.get(key) ?? []), item.slice(at + 1).trim()]);
  }
  return parts;
};

const SCHEMES: Record<Provider, { separator: string; time: string; signature: string; joiner: string }> = {
  stripe: { separator: ',', time: 't', signature: 'v1', joiner: '.' },
  paddle: { separator: ';', time: 'ts', signature: 'h1', joiner: ':' },
};

/** throws webhook-signature-invalid unless the header signs these exact bytes with the secret, within the tolerance */
export const verifySignature = (
  provider: Provider,
  secret: string,
  header: string | undefined,
  rawBody: Buffer,
  nowMs: number,
  toleranceSec: number,
): void => {
  if (header === undefined || header.trim() === '')
    throw billingErrors.signatureMissing(provider === 'stripe' ? 'Stripe-Signature' : 'Paddle-Signature');
  const scheme = SCHEMES[provider];
  const parts = partsOf(header, scheme.separator);
  const time = parts.get(scheme.time)?.[0];
  const signatures = parts.get(scheme.signature) ?? [];
  if (!time || !/^\d{1,12}$/.test(time) || signatures.length === 0)
    throw billingErrors.signatureInvalid("The signature header is not in the provider's format.");
  const expected = hmacHex(secret, Buffer.concat([Buffer.from(`${time}${scheme.joiner}`), rawBody]));
  // every candidate is compared, so the time taken does not tell which one failed
  let matched = false;
  for (const candidate of signatures) matched = equalsHex(expected, candidate) || matched;
  if (!matched) throw billingErrors.signatureInvalid();
  if (Math.abs(nowMs / 1000 - Number(time)) > toleranceSec)
    throw billingErrors.signatureInvalid(`The signature is older than ${toleranceSec} s (or from the future).`);
};

export interface WebhookAnswer {
  processed: boolean;
  eventId: string;
  eventType: string;
}

/** the providers this deployment accepts: those whose secret is configured */
export const configuredProvider = (ctx: BillingContext, name: string): { provider: Provider; secret: string } => {
  const provider = PROVIDERS.find((p) => p === name);
  const secret = provider ? ctx.settings.webhookSecrets[provider] : undefined;
  if (!provider || !secret) throw billingErrors.unknownProvider(name);
  return { provider, secret };
};

/**
 * Verifies, parses and stores a delivery; answers processed true for an event seen the first
 * time, false for a replay (no side effect). Nothing is applied here: the worker does it.
 */
export const receiveWebhook = async (
  _kernel: Kernel,
  ctx: BillingContext,
  name: string,
  headers: Record<string, string | string[] | undefined>,
  rawBody: Buffer,
): Promise<WebhookAnswer> => {
  const { provider, secret } = configuredProvider(ctx, name);
  const header = headers[SIGNATURE_HEADERS[provider]];
  verifySignature(
    provider,
    secret,
    Array.isArray(header) ? header[0] : header,
    rawBody,
    ctx.clock.now().getTime(),
    ctx.settings.webhookToleranceSec,
  );
  let body: unknown;
  try {
    body = JSON.parse(rawBody.toString('utf8'));
  } catch {
    throw billingErrors.malformedWebhook('The body is not JSON.');
  }
  const event = readProviderEvent(provider, body);
  if (!event)
    throw billingErrors.malformedWebhook(
      provider === 'stripe' ? 'The event has no id or type.' : 'The event has no event_id or event_type.',
    );
  const stored = await ctx.intake.store({
    provider,
    eventId: event.eventId,
    eventType: event.eventType,
    payload: rawBody,
    receivedAt: ctx.clock.now(),
  });
  return { processed: stored, eventId: event.eventId, eventType: event.eventType };
};

/** a stored delivery whose application failed this often is failed for good (the counter is the row's, in SQL: concurrent workers add up) */
const WEBHOOK_ATTEMPTS = 10;

/** the stored deliveries as a kernel queue: one pending event, locked for its application (another worker's is skipped) */
const WEBHOOKS = { table: 'billing.webhook_events', key: ['provider', 'event_id'] } as const;
const LOCK_PENDING = pickSql(WEBHOOKS, {
  columns: '1',
  due: `item.provider = $1 AND item.event_id = $2 AND item.status = 'pending'`,
  limit: 1,
});

interface PendingRow {
  provider: Provider;
  event_id: string;
  payload: Buffer;
}

/**
 * Applies stored deliveries, oldest first. Each is applied in one transaction with the mark that
 * it was processed (the kernel queue's pick locks it: workers share the work, never apply one twice).
 */
export const processWebhooks = async (
  kernel: Kernel,
  ctx: BillingContext,
  limit = 100,
): Promise<{ processed: number; more: boolean }> => {
  const { rows } = await kernel.db.query<{ provider: Provider; event_id: string }>(
    `SELECT provider, event_id FROM billing.webhook_events WHERE status = 'pending' ORDER BY received_at LIMIT $1`,
    [limit],
  );
  let processed = 0;
  for (const row of rows) {
    try {
      if (await processOne(kernel, ctx, row.provider, row.event_id)) processed += 1;
    } catch (error) {
      kernel.logger.warn(
        { err: error, provider: row.provider, eventId: row.event_id },
        'webhook processing failed; retried at the next run',
      );
      await kernel.db.query(
        `UPDATE billing.webhook_events SET attempts = attempts + 1, outcome = $3, status = CASE WHEN attempts + 1 >= $4 THEN 'failed' ELSE status END
        WHERE provider = $1 AND event_id = $2`,
        [row.provider, row.event_id, String((error as Error).message).slice(0, 500), WEBHOOK_ATTEMPTS],
      );
    }
  }
  return { processed, more: rows.length === limit };
};

const processOne = async (
  kernel: Kernel,
  ctx: BillingContext,
  provider: Provider,
  eventId: string,
): Promise<boolean> => {
  // the tenant is known only once the row is read; the command's tenant is set by the first lookup
  const claimed = await kernel.db.query<PendingRow>(
    `SELECT provider, event_id, payload FROM billing.webhook_events WHERE provider = $1 AND event_id = $2 AND status = 'pending'`,
    [provider, eventId],
  );
  const row = claimed.rows[0];
  if (!row) return false;
  const event = readProviderEvent(provider, JSON.parse(row.payload.toString('utf8')))!;
  const target = await targetOf(kernel, event);
  return kernel.commands.run(systemMeta(target?.tenantId ?? '00000000-0000-0000-0000-000000000000'), async (uow) => {
    const locked = await uow.tx.query(LOCK_PENDING, [provider, eventId]);
    if (!locked.rowCount) return false;
    let outcome: string;
    let status = 'processed';
    if (!target) {
      status = 'ignored';
      outcome = 'no subscription matches the event';
    } else if (event.action === 'ignored') {
      status = 'ignored';
      outcome = `event type ${event.eventType} is not handled`;
    } else {
      try {
        outcome = await applyAction(uow, ctx, provider, target.tenantId, target.linked, event);
      } catch (error) {
        // a refusal (a terminated subscription paid, a downgrade pending) is an outcome, not a failure to retry
        if (!isDomainError(error)) throw error;
        status = 'ignored';
        outcome = `refused: ${error.suffix}: ${error.detail}`;
      }
    }
    await uow.tx.query(
      `UPDATE billing.webhook_events SET status = $3, outcome = $4, tenant_id = $5, processed_at = $6, attempts = attempts + 1
      WHERE provider = $1 AND event_id = $2`,
      [provider, eventId, status, outcome, target?.tenantId ?? null, ctx.clock.now()],
    );
    return true;
  });
};

/**
 * The tenant an event concerns: the one its provider subscription id is bound to (unique across
 * tenants, rm.billing_external_ids) — whatever tenant the object's metadata names —, else the
 * tenant of the metadata, to which the id is then linked (unless another tenant took it meanwhile:
 * the link is refused and the event with it).
 */
const targetOf = async (
  kernel: Kernel,
  event: ProviderEvent,
): Promise<{ tenantId: string; linked: boolean } | null> => {
  if (event.externalId) {
    const holder = await externalIdHolder(kernel.db, event.externalId);
    if (holder) return { tenantId: holder, linked: true };
  }
  if (event.tenantId) {
    const byTenant = await currentSubscription(kernel.db, event.tenantId);
    if (byTenant) return { tenantId: byTenant.tenantId, linked: false };
  }
  return null;
};

/**
 * The plan a provider's subscription now stands for: the first of its prices that a plan lists
 * (the price is what the customer pays), else the plan our own metadata names (plan_id), else none.
 */
const planOf = async (uow: UnitOfWork, provider: Provider, event: ProviderEvent): Promise<string | null> => {
  const plans = await plansByProviderPrices(uow.tx, provider, event.priceIds);
  for (const priceId of event.priceIds) {
    const plan = plans.find((p) => p.providerPriceIds[provider].includes(priceId));
    if (plan) return plan.id;
  }
  return event.planId;
};

/** applies the event; answers the outcome recorded on its row */
const applyAction = async (
  uow: UnitOfWork,
  ctx: BillingContext,
  provider: Provider,
  tenantId: string,
  linked: boolean,
  event: ProviderEvent,
): Promise<string> => {
  let outcome = 'applied';
  const now = ctx.clock.now().toISOString();
  const commands: ProviderCommand[] =
    !linked && event.externalId ? [{ type: 'LinkExternal', externalId: event.externalId, now }] : [];
  switch (event.action) {
    case 'payment_succeeded':
      commands.push({ type: 'RecordPayment', now });
      break;
    case 'payment_failed':
      commands.push({ type: 'RecordPaymentFailure', now });
      break;
    case 'canceled':
      commands.push({ type: 'RecordProviderCancellation', now });
      break;
    case 'plan_updated': {
      const planId = await planOf(uow, provider, event);
      if (planId) commands.push({ type: 'SyncPlan', planId, now });
      else
        outcome = `applied: no plan lists the price (${event.priceIds.join(', ') || 'none'}) and no plan_id metadata`;
      break;
    }
    case 'ignored':
      break;
    default:
      event.action satisfies never;
  }
  await applyProviderCommands(uow, ctx, tenantId, commands);
  return outcome;
};
