/**
 * Provider events as billing understands them (spec 001, Handled provider events; rulings: both
 * vocabularies — the gRPC table's and the REST listing's — from either provider, plus Paddle's own
 * names). The subscription is found by the provider's subscription id (external_id), else by the
 * tenant id the provider object carries in its metadata (Stripe `metadata.tenant_id`, Paddle
 * `custom_data.tenant_id`), which links it.
 */
export type WebhookAction = 'payment_succeeded' | 'payment_failed' | 'canceled' | 'plan_updated' | 'ignored';

export const ACTIONS: Record<string, WebhookAction> = {
  'invoice.payment_succeeded': 'payment_succeeded',
  'invoice.paid': 'payment_succeeded',
  'invoice.payment_failed': 'payment_failed',
  'customer.subscription.deleted': 'canceled',
  'subscription.canceled': 'canceled',
  'customer.subscription.updated': 'plan_updated',
  'subscription.updated': 'plan_updated',
  // Paddle Billing's own names
  'transaction.completed': 'payment_succeeded',
  'transaction.paid': 'payment_succeeded',
  'transaction.payment_failed': 'payment_failed',
};

export interface ProviderEvent {
  eventId: string;
  eventType: string;
  action: WebhookAction;
  /** the provider's subscription id */
  externalId: string | null;
  tenantId: string | null;
  /** customer.subscription.updated: the plan the provider object names (metadata plan_id) */
  planId: string | null;
}

export type Provider = 'stripe' | 'paddle';
export const PROVIDERS: readonly Provider[] = ['stripe', 'paddle'];

const text = (v: unknown): string | null => (typeof v === 'string' && v.length > 0 && v.length <= 256 ? v : null);
const record = (v: unknown): Record<string, unknown> =>
  v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};

const isSubscriptionEvent = (type: string): boolean =>
  type.startsWith('customer.subscription.') || type.startsWith('subscription.');

/** the event of a verified body; null when it lacks an id or a type (a malformed body) */
export const readProviderEvent = (provider: Provider, body: unknown): ProviderEvent | null => {
  const root = record(body);
  if (provider === 'stripe') {
    const eventId = text(root.id);
    const eventType = text(root.type);
    if (!eventId || !eventType) return null;
    const object = record(record(root.data).object);
    const metadata = record(object.metadata);
    const externalId = isSubscriptionEvent(eventType) ? text(object.id) : text(object.subscription);
    return {
      eventId,
      eventType,
      action: ACTIONS[eventType] ?? 'ignored',
      externalId,
      tenantId: text(metadata.tenant_id),
      planId: text(metadata.plan_id),
    };
  }
  const eventId = text(root.event_id);
  const eventType = text(root.event_type);
  if (!eventId || !eventType) return null;
  const data = record(root.data);
  const custom = record(data.custom_data);
  const externalId = isSubscriptionEvent(eventType) ? text(data.id) : text(data.subscription_id);
  return {
    eventId,
    eventType,
    action: ACTIONS[eventType] ?? 'ignored',
    externalId,
    tenantId: text(custom.tenant_id),
    planId: text(custom.plan_id),
  };
};
