import type { FastifyInstance, FastifyReply } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Kernel } from '../../infra/kernel';

/** What the identity write routes share: who may call a route, and answers without a body. */

/** one concept's routes (session, account, mfa, membership, role, tenant, providers), registered by index.ts */
export type IdentityRoutes = (app: FastifyInstance, kernel: Kernel) => void;

export const typed = (app: FastifyInstance) => app.withTypeProvider<ZodTypeProvider>();

export const pub = { access: 'public' } as const;
export const bearer = { access: 'bearer' } as const;
export const perm = (permission: string) => ({ access: 'permission', permission }) as const;

/**
 * What a tenant whose subscription is suspended meets (docs/gateway.md, "Billing admission"): a
 * change of the tenant's members and roles is a mutation of its data (402); the caller's own
 * session and account (logout, tenant switch, MFA, sign-in links, verification mail) are not.
 */
export const tenantData = { whileSuspended: 'refused' } as const;
export const ownSession = { whileSuspended: 'allowed' } as const;

export const noBody = (reply: FastifyReply, status: 202 | 204) => reply.code(status).send();
