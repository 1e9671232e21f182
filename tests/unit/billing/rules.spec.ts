import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fromMs, toMs } from '../../../domain/billing/instant';
import { dueNotices } from '../../../domain/billing/notices';
import type { PlanLimits } from '../../../domain/billing/resources';
import { checkLimit, effectiveLimits, isDowngrade, percentageOf } from '../../../domain/billing/resources';
import type { Subscription } from '../../../domain/billing/subscription';
import { plusDays, plusMonth } from '../../../domain/billing/timeline';
import { usageEffectOf } from '../../../domain/billing/usage';
import { readProviderEvent } from '../../../domain/billing/webhooks';

const limits = (o: Partial<PlanLimits> = {}): PlanLimits => ({
  users: 5,
  records: 100,
  storageBytes: 1000,
  eventsPerDay: 10,
  modules: 1,
  featureFlags: 1,
  customDomains: 1,
  includedSubtenants: 0,
  requestsPerMinute: 0,
  moneyMaxTransaction: 10,
  moneyMaxBalance: 100,
  ...o,
});

describe('instants without a clock', () => {
  it('round-trip every instant exactly as toISOString and Date.parse do', () => {
    fc.assert(
      fc.property(fc.integer({ min: -62_135_596_800_000, max: 253_402_300_799_999 }), (ms) => {
        const iso = new Date(ms).toISOString();
        expect(fromMs(ms)).toBe(iso);
        expect(toMs(iso)).toBe(ms);
      }),
    );
  });
  it("a month later is the same day, clamped to the month's end", () => {
    expect(plusMonth('2025-01-31T08:00:00.000Z')).toBe('2025-02-28T08:00:00.000Z');
    expect(plusMonth('2024-01-31T08:00:00.000Z')).toBe('2024-02-29T08:00:00.000Z');
    expect(plusMonth('2025-12-15T23:59:59.999Z')).toBe('2026-01-15T23:59:59.999Z');
  });
});

describe('limits', () => {
  it('0 is unlimited: CheckLimit allows always, remaining -1, percentage -1', () => {
    expect(checkLimit('records', 10 ** 9, 0)).toEqual({
      resource: 'records',
      allowed: true,
      currentUsage: 10 ** 9,
      limit: 0,
      remaining: -1,
    });
    expect(percentageOf(3, 0)).toBe(-1);
  });
  it('allowed below the limit, refused at or above it', () => {
    expect(checkLimit('users', 4, 5)).toMatchObject({ allowed: true, remaining: 1 });
    expect(checkLimit('users', 5, 5)).toMatchObject({ allowed: false, remaining: 0 });
    expect(checkLimit('users', 7, 5)).toMatchObject({ allowed: false, remaining: 0 });
    expect(percentageOf(1, 3)).toBe(33.33);
  });
  it('a downgrade lowers any limit (unlimited → limited included); a pending one holds creation to the stricter plan', () => {
    expect(isDowngrade(limits(), limits({ users: 10 }))).toBe(false);
    expect(isDowngrade(limits(), limits({ users: 4 }))).toBe(true);
    expect(isDowngrade(limits({ records: 0 }), limits({ records: 1_000_000 }))).toBe(true);
    expect(isDowngrade(limits({ records: 100 }), limits({ records: 0 }))).toBe(false);
    expect(effectiveLimits(limits({ users: 50, records: 0 }), limits({ users: 5, records: 10 }))).toMatchObject({
      users: 5,
      records: 10,
    });
  });
});

describe('usage sources', () => {
  it('members count one each; a deleted member stops counting; files count their bytes (a processed file its new bytes) until permanently deleted', () => {
    expect(usageEffectOf('auth.member.added', { userId: 'u1' })).toEqual({
      resource: 'users',
      itemId: 'u1',
      amount: 1,
      counted: true,
    });
    expect(usageEffectOf('auth.member.deleted', { userId: 'u1' })).toMatchObject({ counted: false });
    expect(usageEffectOf('files.file.uploaded', { fileId: 'f1', sizeBytes: 2048 })).toEqual({
      resource: 'storage_bytes',
      itemId: 'f1',
      amount: 2048,
      counted: true,
    });
    expect(usageEffectOf('files.file.uploaded', { fileId: 'f1', sizeBytes: '9007199254740991' })).toMatchObject({
      amount: 9_007_199_254_740_991,
    });
    expect(usageEffectOf('files.file.deleted', { fileId: 'f1' })).toBeNull();
    expect(usageEffectOf('files.file.processed', { fileId: 'f1', sizeBytes: 700, previousSizeBytes: 2048 })).toEqual({
      resource: 'storage_bytes',
      itemId: 'f1',
      amount: 700,
      counted: true,
    });
    expect(usageEffectOf('files.file.permanent_deleted', { fileId: 'f1' })).toMatchObject({ counted: false });
    expect(usageEffectOf('files.file.uploaded', { fileId: 'f1', sizeBytes: -1 })).toBeNull();
    expect(usageEffectOf('money.wallet.credited', {})).toBeNull();
  });
});

describe('provider events', () => {
  it('stripe: invoice events name the subscription, subscription events are it; metadata carries tenant and plan', () => {
    expect(
      readProviderEvent('stripe', {
        id: 'evt_1',
        type: 'invoice.paid',
        data: { object: { id: 'in_1', subscription: 'sub_1' } },
      }),
    ).toEqual({
      eventId: 'evt_1',
      eventType: 'invoice.paid',
      action: 'payment_succeeded',
      externalId: 'sub_1',
      tenantId: null,
      planId: null,
      priceIds: [],
    });
    expect(
      readProviderEvent('stripe', {
        id: 'evt_2',
        type: 'customer.subscription.updated',
        data: { object: { id: 'sub_2', metadata: { tenant_id: 't', plan_id: 'p' } } },
      }),
    ).toMatchObject({ action: 'plan_updated', externalId: 'sub_2', tenantId: 't', planId: 'p' });
    expect(readProviderEvent('stripe', { type: 'invoice.paid' })).toBeNull();
  });
  it('stripe, current API versions (2025-03-31.basil on): the invoice names its subscription and its metadata under parent.subscription_details; the subscription lists its prices', () => {
    expect(
      readProviderEvent('stripe', {
        id: 'evt_3',
        type: 'invoice.payment_succeeded',
        data: {
          object: {
            id: 'in_3',
            object: 'invoice',
            parent: {
              type: 'subscription_details',
              quote_details: null,
              subscription_details: { subscription: 'sub_3', metadata: { tenant_id: 't3' } },
            },
          },
        },
      }),
    ).toMatchObject({ action: 'payment_succeeded', externalId: 'sub_3', tenantId: 't3' });
    // before basil (from 2022-11-15): subscription at the top, its metadata in subscription_details
    expect(
      readProviderEvent('stripe', {
        id: 'evt_4',
        type: 'invoice.payment_failed',
        data: {
          object: { id: 'in_4', subscription: 'sub_4', subscription_details: { metadata: { tenant_id: 't4' } } },
        },
      }),
    ).toMatchObject({ action: 'payment_failed', externalId: 'sub_4', tenantId: 't4' });
    expect(
      readProviderEvent('stripe', {
        id: 'evt_5',
        type: 'customer.subscription.updated',
        data: {
          object: {
            id: 'sub_5',
            object: 'subscription',
            items: {
              object: 'list',
              data: [
                { id: 'si_1', price: { id: 'price_a', object: 'price' } },
                { id: 'si_2', plan: { id: 'price_b' } },
                { id: 'si_3', price: { id: 'price_a' } },
              ],
            },
          },
        },
      }),
    ).toMatchObject({ action: 'plan_updated', externalId: 'sub_5', planId: null, priceIds: ['price_a', 'price_b'] });
  });
  it('paddle: both vocabularies, event_id and event_type', () => {
    expect(
      readProviderEvent('paddle', { event_id: 'e', event_type: 'subscription.canceled', data: { id: 'sub_9' } }),
    ).toMatchObject({ action: 'canceled', externalId: 'sub_9' });
    expect(
      readProviderEvent('paddle', {
        event_id: 'e',
        event_type: 'invoice.payment_failed',
        data: { subscription_id: 'sub_9' },
      }),
    ).toMatchObject({ action: 'payment_failed', externalId: 'sub_9' });
    expect(readProviderEvent('paddle', { event_id: 'e', event_type: 'customer.created', data: {} })).toMatchObject({
      action: 'ignored',
    });
  });
  it('paddle billing: transactions name subscription_id, subscriptions list items[].price.id, custom_data carries the tenant', () => {
    expect(
      readProviderEvent('paddle', {
        event_id: 'evt_01',
        event_type: 'transaction.completed',
        occurred_at: '2026-01-01T00:00:00.000Z',
        notification_id: 'ntf_01',
        data: {
          id: 'txn_01',
          status: 'completed',
          subscription_id: 'sub_01',
          custom_data: { tenant_id: 't' },
          items: [{ price_id: 'pri_01', price: { id: 'pri_01' }, quantity: 1 }],
        },
      }),
    ).toMatchObject({ action: 'payment_succeeded', externalId: 'sub_01', tenantId: 't', priceIds: [] });
    expect(
      readProviderEvent('paddle', {
        event_id: 'evt_02',
        event_type: 'subscription.updated',
        data: {
          id: 'sub_01',
          status: 'active',
          items: [
            { status: 'active', quantity: 1, price: { id: 'pri_02', product_id: 'pro_01' } },
            { price_id: 'pri_03' },
          ],
        },
      }),
    ).toMatchObject({ action: 'plan_updated', externalId: 'sub_01', priceIds: ['pri_02', 'pri_03'] });
    expect(
      readProviderEvent('paddle', { event_id: 'e', event_type: 'subscription.past_due', data: { id: 'sub_01' } }),
    ).toMatchObject({ action: 'payment_failed', externalId: 'sub_01' });
  });
});

describe('escalation notices', () => {
  const base: Subscription = {
    id: 's',
    tenantId: 't',
    planId: 'p',
    status: 'past_due',
    version: 3,
    currentPeriodStart: '2026-01-01T00:00:00.000Z',
    currentPeriodEnd: '2026-01-15T00:00:00.000Z',
    trialEnd: '2026-01-15T00:00:00.000Z',
    canceledAt: null,
    cancelAtPeriodEnd: false,
    externalId: null,
    pendingPlanId: null,
    downgradeAt: null,
    pastDueSince: '2026-01-15T00:00:00.000Z',
    downgradedAt: null,
    termination: null,
    createdAt: '2026-01-01T00:00:00.000Z',
    updatedAt: '2026-01-15T00:00:00.000Z',
  };
  const kinds = (s: Subscription, day: number) =>
    dueNotices(s, { priceCents: 100 }, plusDays(s.pastDueSince!, day)).map((n) => n.kind);
  it('the trial-ending notice 3 days before a paid trial ends, not for a free plan', () => {
    const trial = { ...base, status: 'trialing' as const, pastDueSince: null };
    expect(dueNotices(trial, { priceCents: 100 }, '2026-01-12T00:00:01.000Z').map((n) => n.kind)).toEqual([
      'trial_ending',
    ]);
    expect(dueNotices(trial, { priceCents: 100 }, '2026-01-11T23:59:59.000Z')).toEqual([]);
    expect(dueNotices(trial, { priceCents: 0 }, '2026-01-13T00:00:00.000Z')).toEqual([]);
  });
  it('every mark reached, once per key: past_due, reminders, suspended, warnings, terminated — six before the terminated one', () => {
    expect(kinds(base, 0)).toEqual(['past_due']);
    expect(kinds(base, 7)).toEqual(['past_due', 'payment_reminder', 'payment_reminder']);
    const terminated = { ...base, status: 'terminated' as const };
    const all = kinds(terminated, 38);
    expect(all).toEqual([
      'past_due',
      'payment_reminder',
      'payment_reminder',
      'suspended',
      'termination_warning',
      'termination_warning',
      'terminated',
    ]);
    expect(
      new Set(dueNotices(terminated, { priceCents: 1 }, plusDays(base.pastDueSince!, 38)).map((n) => n.key)).size,
    ).toBe(7);
    // a suspension notice needs the suspension: a past_due subscription the worker has not moved yet gets none
    expect(kinds(base, 9)).not.toContain('suspended');
  });
});
