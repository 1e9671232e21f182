import { z } from 'zod';
import type { Decider } from './decider';

/**
 * A terminated tenant's erasure (spec 001 rule 4: deleting_records → deleting_files → completed),
 * one definition for its producer and its consumers. Billing drives the phases: when a phase is
 * due it records an erasure request on the log; every service that holds something of the
 * tenant for that phase erases it and records its confirmation on the log; billing moves to the
 * next phase only when every service of the phase has confirmed (docs/decisions.md, Termination).
 * Nothing here is a call into another context: requests and confirmations are events.
 */
export const ERASURE_PHASES = ['deleting_records', 'deleting_files'] as const;
export type ErasurePhase = (typeof ERASURE_PHASES)[number];

/** billing's request: erase what you hold of this tenant for this phase */
export const ERASURE_REQUESTED = 'billing.tenant.erasure_requested';
/** a service's confirmation, on its own topic: `<domain>.tenant.erased` */
export const TENANT_ERASED_SUFFIX = '.tenant.erased';
export const tenantErasedType = (domain: string): string => `${domain}${TENANT_ERASED_SUFFIX}`;

/**
 * Which service erases in which phase, and what it keeps: the rule of each (README, Termination).
 * Records first (the tenant's data, its bus, its notifications, its money frozen, its audit
 * anonymized while the members who name it are still known), then files and last the members
 * and sessions themselves.
 */
export const ERASURE_RULES = {
  data: 'deleting_records',
  events: 'deleting_records',
  notify: 'deleting_records',
  money: 'deleting_records',
  audit: 'deleting_records',
  files: 'deleting_files',
  auth: 'deleting_files',
} as const satisfies Record<string, ErasurePhase>;
export type ErasingService = keyof typeof ERASURE_RULES;

export const ErasureRequested = z.object({
  /** one termination of one subscription (a tenant recovered and terminated again erases again) */
  terminationId: z.string(),
  subscriptionId: z.string(),
  phase: z.enum(ERASURE_PHASES),
});
export type ErasureRequested = z.infer<typeof ErasureRequested>;

export const TenantErased = z.object({
  terminationId: z.string(),
  phase: z.enum(ERASURE_PHASES),
  service: z.string(),
});
export type TenantErased = z.infer<typeof TenantErased>;

export const terminationIdOf = (subscriptionId: string, startedAt: string): string => `${subscriptionId}@${startedAt}`;

export type ErasureEvent =
  { type: typeof ERASURE_REQUESTED; data: ErasureRequested } | { type: string; data: TenantErased };

export type ErasureCommand =
  { type: 'Request'; request: ErasureRequested } | { type: 'Confirm'; domain: string; confirmation: TenantErased };

/**
 * The stream of a tenant's erasure requests (billing's) or of one service's confirmations: a
 * journal, every command one event (a request or a confirmation repeated is harmless: the
 * readers look for at least one).
 */
export const erasureDecider: Decider<{ count: number }, ErasureCommand, ErasureEvent> = {
  initialState: () => ({ count: 0 }),
  evolve: (s) => ({ count: s.count + 1 }),
  decide: (c) =>
    c.type === 'Request'
      ? [{ type: ERASURE_REQUESTED, data: c.request }]
      : [{ type: tenantErasedType(c.domain), data: c.confirmation }],
};
