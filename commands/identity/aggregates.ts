import { streamIdOf } from '../../domain/shared/event';
import type { CausationMeta } from '../../infra/eventstore/event-store';
import { defineAggregate } from '../../infra/eventstore/aggregate';
import { UnitOfWork } from '../../infra/eventstore/unit-of-work';
import type { Kernel } from '../../infra/kernel';
import { AccountEvent, accountDecider } from '../../domain/identity/account';
import { MembershipEvent, membershipDecider } from '../../domain/identity/membership';
import { MfaEvent, mfaDecider } from '../../domain/identity/mfa';
import { RoleEvent, roleDecider } from '../../domain/identity/role';
import { TenantEvent, tenantDecider } from '../../domain/identity/tenant';
import { PLATFORM_TENANT_ID } from '../../domain/identity/constants';

export const Account = defineAggregate({
  name: 'identity.account',
  decider: accountDecider,
  stateSchema: 'account.v2',
  toEvent: (e) => AccountEvent.parse(e),
});
export const Mfa = defineAggregate({
  name: 'identity.mfa',
  decider: mfaDecider,
  stateSchema: 'mfa.v2',
  toEvent: (e) => MfaEvent.parse(e),
});
export const Tenant = defineAggregate({
  name: 'identity.tenant',
  decider: tenantDecider,
  stateSchema: 'tenant.v1',
  toEvent: (e) => TenantEvent.parse(e),
});
export const Membership = defineAggregate({
  name: 'identity.member',
  decider: membershipDecider,
  stateSchema: 'member.v1',
  toEvent: (e) => MembershipEvent.parse(e),
});
export const Role = defineAggregate({
  name: 'identity.role',
  decider: roleDecider,
  stateSchema: 'role.v1',
  toEvent: (e) => RoleEvent.parse(e),
});

export const accountStream = (userId: string) => streamIdOf('identity.account', PLATFORM_TENANT_ID, userId);
export const mfaStream = (userId: string) => streamIdOf('identity.mfa', PLATFORM_TENANT_ID, userId);
export const tenantStream = (tenantId: string) => streamIdOf('identity.tenant', tenantId, tenantId);
export const memberStream = (tenantId: string, userId: string) => streamIdOf('identity.member', tenantId, userId);
export const roleStream = (tenantId: string, roleId: string) => streamIdOf('identity.role', tenantId, roleId);

/**
 * Accounts and their MFA live in the platform pseudo-tenant (a person may belong to several
 * tenants), while a command usually runs in a tenant. This second unit of work shares the
 * command's transaction but stamps its events with the platform tenant; flush it before the
 * handler returns so both commit together.
 */
export const platformUnit = (kernel: Kernel, uow: UnitOfWork): UnitOfWork =>
  uow.meta.tenantId === PLATFORM_TENANT_ID ? uow : uow.sibling({ ...uow.meta, tenantId: PLATFORM_TENANT_ID });

export const flushPlatform = async (kernel: Kernel, uow: UnitOfWork, platform: UnitOfWork): Promise<void> => {
  if (platform !== uow) await platform.flush(kernel.projections);
};

/** the envelope of a public request (no principal yet): who acts is known only after the check */
export const anonymousMeta = (tenantId: string, traceId: string, actorId = 'anonymous'): CausationMeta => ({
  tenantId,
  actorId,
  traceId,
  correlationId: traceId,
  causationId: null,
});
