import { PlanEvent } from '../../domain/billing/plan';
import { SubscriptionEvent } from '../../domain/billing/subscription';
import { USAGE_EVENT_TYPES, usageEffectOf } from '../../domain/billing/usage';
import { defineProjections } from '../../infra/services';
import type { Projection } from '../../infra/projections/projection';
import { sql } from '../../infra/projections/projection';

/**
 * Billing's read models, all inline: a plan or subscription answered right after its change, and
 * usage counted in the very transaction of the event that changes it (a member added, a file
 * uploaded), so CheckLimit never reads a count older than what was committed.
 */
export const plansProjection: Projection<'billing_plans'> = {
  name: 'billing.plans',
  // 2: provider_price_ids
  version: 2,
  mode: 'inline',
  handles: ['billing.plan.changed'],
  tables: {
    billing_plans: (t) => [
      `CREATE TABLE ${t} (tenant_id text NOT NULL, id text NOT NULL, name text NOT NULL, description text NOT NULL, price_cents bigint NOT NULL,
        currency text NOT NULL, limits jsonb NOT NULL, features text[] NOT NULL, provider_price_ids jsonb NOT NULL, is_active boolean NOT NULL, created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL, version int NOT NULL, PRIMARY KEY (tenant_id, id))`,
      `CREATE UNIQUE INDEX ON ${t} (tenant_id, lower(name))`,
    ],
  },
  evolve: (stored, t) => {
    const e = PlanEvent.parse({ type: stored.type, data: stored.data });
    const p = e.data.plan;
    return [
      sql(
        `INSERT INTO ${t.billing_plans} AS p (tenant_id, id, name, description, price_cents, currency, limits, features, provider_price_ids, is_active, created_at, updated_at, version)
      VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, $8, $13::jsonb, $9, $10, $11, $12)
      ON CONFLICT (tenant_id, id) DO UPDATE SET name = EXCLUDED.name, description = EXCLUDED.description, price_cents = EXCLUDED.price_cents,
        currency = EXCLUDED.currency, limits = EXCLUDED.limits, features = EXCLUDED.features, provider_price_ids = EXCLUDED.provider_price_ids,
        is_active = EXCLUDED.is_active, updated_at = EXCLUDED.updated_at,
        version = EXCLUDED.version WHERE p.version < EXCLUDED.version`,
        stored.tenantId,
        p.id,
        p.name,
        p.description,
        p.priceCents,
        p.currency,
        JSON.stringify(p.limits),
        p.features,
        p.isActive,
        p.createdAt,
        p.updatedAt,
        stored.streamVersion,
        JSON.stringify(p.providerPriceIds),
      ),
    ];
  },
};

/** one row per subscription (a tenant's earlier, ended ones stay); the snapshot is the event's */
export const subscriptionsProjection: Projection<'billing_subscriptions'> = {
  name: 'billing.subscriptions',
  version: 1,
  mode: 'inline',
  handles: ['billing.subscription.changed'],
  tables: {
    billing_subscriptions: (t) => [
      `CREATE TABLE ${t} (tenant_id text NOT NULL, id text NOT NULL, plan_id text NOT NULL, status text NOT NULL, version int NOT NULL,
        current_period_start timestamptz NOT NULL, current_period_end timestamptz NOT NULL, trial_end timestamptz, canceled_at timestamptz,
        cancel_at_period_end boolean NOT NULL, external_id text, pending_plan_id text, downgrade_at timestamptz, past_due_since timestamptz,
        termination_phase text, termination_started_at timestamptz, snapshot jsonb NOT NULL, created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL,
        stream_version int NOT NULL, PRIMARY KEY (tenant_id, id))`,
      `CREATE INDEX ON ${t} (id)`,
      `CREATE INDEX ON ${t} (external_id) WHERE external_id IS NOT NULL`,
      `CREATE INDEX ON ${t} (tenant_id, created_at DESC)`,
      `CREATE INDEX ON ${t} (plan_id) WHERE status IN ('trialing', 'active', 'past_due', 'suspended')`,
      // what the escalation worker looks at: everything not at rest
      `CREATE INDEX ON ${t} (status) WHERE status <> 'canceled' AND (status <> 'terminated' OR termination_phase <> 'completed')`,
    ],
  },
  evolve: (stored, t) => {
    const e = SubscriptionEvent.parse({ type: stored.type, data: stored.data });
    const s = e.data.subscription;
    return [
      sql(
        `INSERT INTO ${t.billing_subscriptions} AS s (tenant_id, id, plan_id, status, version, current_period_start, current_period_end, trial_end, canceled_at,
        cancel_at_period_end, external_id, pending_plan_id, downgrade_at, past_due_since, termination_phase, termination_started_at, snapshot, created_at, updated_at, stream_version)
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17::jsonb, $18, $19, $20)
      ON CONFLICT (tenant_id, id) DO UPDATE SET plan_id = EXCLUDED.plan_id, status = EXCLUDED.status, version = EXCLUDED.version,
        current_period_start = EXCLUDED.current_period_start, current_period_end = EXCLUDED.current_period_end, trial_end = EXCLUDED.trial_end,
        canceled_at = EXCLUDED.canceled_at, cancel_at_period_end = EXCLUDED.cancel_at_period_end, external_id = EXCLUDED.external_id,
        pending_plan_id = EXCLUDED.pending_plan_id, downgrade_at = EXCLUDED.downgrade_at, past_due_since = EXCLUDED.past_due_since,
        termination_phase = EXCLUDED.termination_phase, termination_started_at = EXCLUDED.termination_started_at, snapshot = EXCLUDED.snapshot,
        updated_at = EXCLUDED.updated_at, stream_version = EXCLUDED.stream_version
      WHERE s.stream_version < EXCLUDED.stream_version`,
        stored.tenantId,
        s.id,
        s.planId,
        s.status,
        s.version,
        s.currentPeriodStart,
        s.currentPeriodEnd,
        s.trialEnd,
        s.canceledAt,
        s.cancelAtPeriodEnd,
        s.externalId,
        s.pendingPlanId,
        s.downgradeAt,
        s.pastDueSince,
        s.termination?.phase ?? null,
        s.termination?.startedAt ?? null,
        JSON.stringify(s),
        s.createdAt,
        s.updatedAt,
        stored.streamVersion,
      ),
    ];
  },
};

/**
 * Which tenant each payment-provider subscription id (externalId) belongs to: a constraint across
 * tenants (the primary key), so a provider's payments can only ever reach the tenant the id was
 * first bound to. A binding is made when a subscription is created with the id or linked to it,
 * and stays with the tenant (its later subscriptions may carry it again); the commands refuse
 * another tenant's id under a lock on the id (commands/billing/handlers.ts), and the first binding
 * in the log wins here, so a rebuild keeps the same owner even for claims made before that check.
 */
export const externalIdsProjection: Projection<'billing_external_ids'> = {
  name: 'billing.external_ids',
  version: 1,
  mode: 'inline',
  handles: ['billing.subscription.changed'],
  tables: {
    billing_external_ids: (t) => [
      `CREATE TABLE ${t} (external_id text PRIMARY KEY, tenant_id text NOT NULL, subscription_id text NOT NULL, bound_at timestamptz NOT NULL)`,
      `CREATE INDEX ON ${t} (tenant_id)`,
    ],
  },
  evolve: (stored, t) => {
    const e = SubscriptionEvent.parse({ type: stored.type, data: stored.data });
    const s = e.data.subscription;
    if (s.externalId === null || (e.data.change !== 'created' && e.data.change !== 'linked')) return [];
    return [
      sql(
        `INSERT INTO ${t.billing_external_ids} (external_id, tenant_id, subscription_id, bound_at) VALUES ($1, $2, $3, $4)
      ON CONFLICT (external_id) DO NOTHING`,
        s.externalId,
        stored.tenantId,
        s.id,
        stored.occurredAt,
      ),
    ];
  },
};

/**
 * Usage per tenant and resource from other services' events (domain/billing/usage.ts). Each item
 * (a member, a file) keeps its amount and whether it counts, guarded by its stream's version; the
 * counter moves by the difference, in the same statement, only when the item changed — so an
 * event applied again (a rebuild, a replay) moves nothing.
 */
export const usageProjection: Projection<'billing_usage' | 'billing_usage_items'> = {
  name: 'billing.usage',
  version: 3,
  mode: 'inline', // 2: files.file.processed replaces a file's bytes; 3: generated records, modules booked to the installing tenant
  handles: USAGE_EVENT_TYPES,
  tables: {
    billing_usage_items: (t) => [
      `CREATE TABLE ${t} (tenant_id text NOT NULL, resource text NOT NULL, item_id text NOT NULL, amount bigint NOT NULL, counted boolean NOT NULL,
        version int NOT NULL, updated_at timestamptz NOT NULL, PRIMARY KEY (tenant_id, resource, item_id))`,
    ],
    billing_usage: (t) => [
      `CREATE TABLE ${t} (tenant_id text NOT NULL, resource text NOT NULL, used bigint NOT NULL, updated_at timestamptz NOT NULL, PRIMARY KEY (tenant_id, resource))`,
    ],
  },
  evolve: (stored, t) => {
    const effect = usageEffectOf(stored.type, stored.data);
    if (!effect) return [];
    return [
      sql(
        `WITH previous AS (
        SELECT CASE WHEN counted THEN amount ELSE 0 END AS before FROM ${t.billing_usage_items} WHERE tenant_id = $1 AND resource = $2 AND item_id = $3
      ), item AS (
        INSERT INTO ${t.billing_usage_items} AS i (tenant_id, resource, item_id, amount, counted, version, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7)
        ON CONFLICT (tenant_id, resource, item_id) DO UPDATE
          SET amount = CASE WHEN EXCLUDED.counted THEN EXCLUDED.amount ELSE i.amount END, counted = EXCLUDED.counted, version = EXCLUDED.version, updated_at = EXCLUDED.updated_at
          WHERE i.version < EXCLUDED.version
        RETURNING CASE WHEN counted THEN amount ELSE 0 END AS after
      )
      INSERT INTO ${t.billing_usage} AS u (tenant_id, resource, used, updated_at)
        SELECT $1, $2, item.after - COALESCE((SELECT before FROM previous), 0), $7 FROM item
      ON CONFLICT (tenant_id, resource) DO UPDATE SET used = u.used + EXCLUDED.used, updated_at = EXCLUDED.updated_at`,
        effect.tenantId ?? stored.tenantId,
        effect.resource,
        effect.itemId,
        effect.amount,
        effect.counted,
        stored.streamVersion,
        stored.occurredAt,
      ),
    ];
  },
};

export default defineProjections({
  projections: [plansProjection, subscriptionsProjection, externalIdsProjection, usageProjection],
});
