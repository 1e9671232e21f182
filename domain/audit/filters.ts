import { z } from 'zod';
import { commonErrors } from '../shared/errors';
import { PLATFORM_WILDCARD } from '../shared/permissions';

/** since and until: what PostgreSQL and the audit store hold (years 0001 to 9999, offsets within ±15:59), as UTC */
export { Instant } from '../shared/instant';
export const AuditTenantChoice = z
  .string()
  .min(1)
  .max(128)
  .optional()
  .describe('the platform owner only: the tenant to read (ignored for anyone else)');

/** the tenant a request reads: its own, or — for the platform owner only — the one it names */
export const tenantOf = (
  caller: { tenantId: string; permissions: ReadonlySet<string> },
  named: string | undefined,
): string => (named !== undefined && caller.permissions.has(PLATFORM_WILDCARD) ? named : caller.tenantId);

/** GET /audit filters, checked: an action is exact, or a prefix ending in `*` (money.*) */
export interface AuditFilter {
  action?: { exact: string } | { prefix: string };
  entityType?: string;
  entityId?: string;
  actorId?: string;
  since?: Date;
  until?: Date;
}

export const actionFilter = (action: string | undefined): AuditFilter['action'] => {
  if (action === undefined) return undefined;
  if (!/^[A-Za-z0-9_.-]+\*?$/.test(action)) {
    throw commonErrors.validation([
      {
        field: 'action',
        message: 'an action such as money.wallet.credited, or a prefix such as money.*',
        code: 'INVALID_ACTION',
      },
    ]);
  }
  return action.endsWith('*') ? { prefix: action.slice(0, -1) } : { exact: action };
};

/** the actions a client may record: domain.entity.verb; audit.* belongs to the audit service itself */
export const ACTION = /^[a-z][a-z0-9_-]*(\.[a-z0-9_-]+){2,}$/;
export const isReservedAction = (action: string): boolean => action.startsWith('audit.');
