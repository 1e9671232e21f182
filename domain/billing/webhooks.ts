/**
 * Provider events as billing understands them (spec 001, Handled provider events; rulings: both
 * vocabularies — the gRPC table's and the REST listing's — from either provider, plus Paddle's own
 * names). The subscription is found by the provider's subscription id (external_id), else by the
 * tenant id the provider object carries in its metadata (Stripe `metadata.tenant_id`, Paddle
 * `custom_data.tenant_id`), which links it.
 *
 * The shapes are the providers' current ones, and the older ones still sent to endpoints pinned to
 * an older version: a Stripe invoice names its subscription under
 * `parent.subscription_details.subscription` since API version 2025-03-31.basil (before: top-level
 * `subscription`), the subscription's metadata under `parent.subscription_details.metadata`
 * (before: `subscription_details.metadata`); a Stripe subscription lists its prices in
 * `items.data[].price.id`. Paddle Billing (API v1) sends `event_id`/`event_type`/`data`, a
 * transaction names its subscription in `data.subscription_id`, a subscription or a transaction
 * lists its prices in `data.items[].price.id` (a transaction item also carries `price_id`).
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
  // a renewal's payment failed (Paddle moves the subscription to past_due)
  'subscription.past_due': 'payment_failed',
};

export interface ProviderEvent {
  eventId: string;
  eventType: string;
  action: WebhookAction;
  /** the provider's subscription id */
  externalId: string | null;
  tenantId: string | null;
  /** customer.subscription.updated: the plan our own metadata names (plan_id), if any */
  planId: string | null;
  /** the provider's price ids the object lists, in its order (mapped to a plan by the ids stored on plans) */
  priceIds: string[];
}

export type Provider = 'stripe' | 'paddle';
export const PROVIDERS: readonly Provider[] = ['stripe', 'paddle'];

const text = (v: unknown): string | null => (typeof v === 'string' && v.length > 0 && v.length <= 256 ? v : null);
const record = (v: unknown): Record<string, unknown> =>
  v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};

const isSubscriptionEvent = (type: string): boolean =>
  type.startsWith('customer.subscription.') || type.startsWith('subscription.');

/** a reference to another object: its id, or an expanded object's id */
const idOf = (v: unknown): string | null => text(v) ?? text(record(v).id);

const list = (v: unknown): unknown[] => (Array.isArray(v) ? v.slice(0, 100) : []);

const distinct = (ids: (string | null)[]): string[] => [...new Set(ids.filter((id): id is string => id !== null))];

/** a Stripe subscription's prices (items.data[].price; a legacy plan-based item names its plan, whose id is a price id) */
const stripePrices = (subscription: Record<string, unknown>): string[] =>
  distinct(list(record(subscription.items).data).map((item) => idOf(record(item).price) ?? idOf(record(item).plan)));

/** a Paddle subscription's or transaction's prices (items[].price.id, or a transaction item's price_id) */
const paddlePrices = (data: Record<string, unknown>): string[] =>
  distinct(list(data.items).map((item) => idOf(record(item).price) ?? text(record(item).price_id)));

/** the event of a verified body; null when it lacks an id or a type (a malformed body) */
export const readProviderEvent = (provider: Provider, body: unknown): ProviderEvent | null => {
  const root = record(body);
  if (provider === 'stripe') {
    const eventId = text(root.id);
    const eventType = text(root.type);
    if (!eventId || !eventType) return null;
    const object = record(record(root.data).object);
    if (isSubscriptionEvent(eventType)) {
      const metadata = record(object.metadata);
      return {
        eventId,
        eventType,
        action: ACTIONS[eventType] ?? 'ignored',
        externalId: text(object.id),
        tenantId: text(metadata.tenant_id),
        planId: text(metadata.plan_id),
        priceIds: stripePrices(object),
      };
    }
    // an invoice: the current shape (parent.subscription_details), then the one before basil
    const details = record(record(object.parent).subscription_details);
    const legacyDetails = record(object.subscription_details);
    const metadataValue = (key: string): string | null =>
      text(record(object.metadata)[key]) ??
      text(record(details.metadata)[key]) ??
      text(record(legacyDetails.metadata)[key]);
    return {
      eventId,
      eventType,
      action: ACTIONS[eventType] ?? 'ignored',
      externalId: idOf(details.subscription) ?? idOf(object.subscription),
      tenantId: metadataValue('tenant_id'),
      planId: metadataValue('plan_id'),
      priceIds: [],
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
    priceIds: isSubscriptionEvent(eventType) ? paddlePrices(data) : [],
  };
};
