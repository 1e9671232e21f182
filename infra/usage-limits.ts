import type { Kernel } from './kernel';
import type { Queryable } from './postgres/db';

/**
 * What a service that meters a resource itself asks billing (spec 001 resource types): the
 * tenant's limit of it, to refuse a creation under its own lock so that concurrent requests never
 * overshoot (the gateway's cached CheckLimit is only the first line), and a way to tell billing that
 * a usage no event of the log carries has changed (a pending invitation). Billing installs it
 * from its RoutePlugin.start; until then (BILLING_ENABLED=false, self-hosted) nothing is limited.
 */
export interface UsageLimits {
  /** the tenant's ceiling of the resource now, as CheckLimit compares it (0 = unlimited) */
  limitOf(tenantId: string, resource: string): Promise<number>;
  /** after a committed change of the tenant's usage that no usage event reports */
  changed(tenantId: string): Promise<void>;
  /**
   * in the transaction of a creation, before it: takes the tenant's lock of the resource (held to
   * the commit, by which the creation is counted) and throws 402 plan-limit-exceeded when adding
   * `adding` would pass the limit — so concurrent creations never overshoot
   */
  assertRoom(tx: Queryable, tenantId: string, resource: string, adding: number): Promise<void>;
}

const unlimited: UsageLimits = {
  limitOf: async () => 0,
  changed: async () => undefined,
  assertRoom: async () => undefined,
};
const installed = new WeakMap<Kernel, UsageLimits>();

export const usageLimits = (kernel: Kernel): UsageLimits => installed.get(kernel) ?? unlimited;

export const setUsageLimits = (kernel: Kernel, port: UsageLimits): void => {
  installed.set(kernel, port);
};
