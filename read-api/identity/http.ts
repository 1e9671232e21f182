import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Kernel } from '../../infra/kernel';

/** What the identity read routes share. */

/** one concept's routes (session, mfa, membership, role, providers), registered by index.ts */
export type IdentityReads = (app: FastifyInstance, kernel: Kernel) => void;

export const typed = (app: FastifyInstance) => app.withTypeProvider<ZodTypeProvider>();

export const perm = (permission: string) => ({ access: 'permission', permission }) as const;

/** the permission keys of the running platform (the built-in Owner role is shown as it grants them) */
export const registeredPermissions = async (kernel: Kernel): Promise<string[]> =>
  (await kernel.permissions.current()).list().map((p) => p.key);
