import * as grpc from '@grpc/grpc-js';
import { FREE_PLAN } from '../../domain/billing/plan';
import type { LimitAnswer, PlanLimits, Resource } from '../../domain/billing/resources';
import { effectiveLimits, LIMIT_KEYS, RESOURCES } from '../../domain/billing/resources';
import type { SubscriptionStatus } from '../../domain/billing/subscription';
import { STATUSES } from '../../domain/billing/subscription';
import type { TlsFiles } from '../../infra/grpc';
import { channelCredentials, loadService } from '../../infra/grpc';
import type { PlanInfo } from '../../domain/billing/plan-info';
import type { BillingAnswers } from './limits';

type Msg = Record<string, unknown>;
const PROTO = 'platform/billing/v1/billing_service.proto';
const SERVICE = 'platform.billing.v1.BillingService';

/**
 * grpc-js waits up to 120 s between reconnection attempts after a long outage; meanwhile the
 * gateway refuses mutations it has no recent answer for (admission.ts), so it looks again within 5 s.
 */
const RECONNECT: grpc.ChannelOptions = {
  'grpc.initial_reconnect_backoff_ms': 500,
  'grpc.max_reconnect_backoff_ms': 5_000,
};

const snake = (k: string): string => k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
const limitsOf = (m: unknown): PlanLimits =>
  Object.fromEntries(
    LIMIT_KEYS.map((k) => [k, Number((m as Msg | undefined)?.[snake(k)] ?? 0)]),
  ) as unknown as PlanLimits;
const statusOf = (value: unknown): SubscriptionStatus =>
  STATUSES.find((s) => `SUBSCRIPTION_STATUS_${s.toUpperCase()}` === value) ?? 'active';

/**
 * Billing's answers over gRPC: what the gateway asks in split deployment, where billing runs in
 * write-api (spec 001: the gateway calls CheckLimit; plan info from ListSubscriptions and
 * RetrievePlan). Every call has the gateway's upstream deadline.
 */
export class GrpcBillingAnswers implements BillingAnswers {
  private readonly client: grpc.Client &
    Record<
      string,
      (
        request: Msg,
        options: grpc.CallOptions,
        callback: (error: grpc.ServiceError | null, response: Msg) => void,
      ) => void
    >;

  constructor(
    target: string,
    tls: TlsFiles | null,
    private readonly deadlineMs: number,
    channelOptions: grpc.ChannelOptions = {},
  ) {
    const Client = grpc.makeGenericClientConstructor(loadService(PROTO, SERVICE), 'BillingService');
    this.client = new Client(target, channelCredentials(tls), { ...RECONNECT, ...channelOptions }) as never;
  }

  private call(method: string, request: Msg): Promise<Msg> {
    return new Promise((resolve, reject) => {
      this.client[method]!(request, { deadline: Date.now() + this.deadlineMs }, (error, response) =>
        error ? reject(error) : resolve(response),
      );
    });
  }

  async planInfo(tenantId: string): Promise<PlanInfo> {
    const listed = await this.call('ListSubscriptions', { tenant_id: tenantId, page_size: 100 });
    const subscriptions = ((listed.data ?? []) as Msg[]).sort((a, b) =>
      String(b.created_at).localeCompare(String(a.created_at)),
    );
    const current = subscriptions[0];
    if (!current) return { tenantId, status: 'none', planId: FREE_PLAN.id, limits: FREE_PLAN.limits };
    const plan = await this.call('RetrievePlan', { id: current.plan_id });
    const pending = current.pending_plan_id ? await this.call('RetrievePlan', { id: current.pending_plan_id }) : null;
    const limits = effectiveLimits(
      limitsOf((plan.plan as Msg).limits),
      pending ? limitsOf((pending.plan as Msg).limits) : null,
    );
    return { tenantId, status: statusOf(current.status), planId: String(current.plan_id), limits };
  }

  async checkLimit(tenantId: string, resource: Resource): Promise<LimitAnswer> {
    const a = await this.call('CheckLimit', {
      tenant_id: tenantId,
      resource: `RESOURCE_TYPE_${resource.toUpperCase()}`,
    });
    const found = RESOURCES.find((r) => `RESOURCE_TYPE_${r.toUpperCase()}` === a.resource) ?? resource;
    return {
      resource: found,
      allowed: a.allowed === true,
      currentUsage: Number(a.current_usage ?? 0),
      limit: Number(a.limit ?? 0),
      remaining: Number(a.remaining ?? 0),
    };
  }

  close(): void {
    this.client.close();
  }
}
