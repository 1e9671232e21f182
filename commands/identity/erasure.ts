import { ERASURE_RULES } from '../../domain/shared/erasure';
import type { Eraser } from '../../infra/erasure';
import { deleteTenantRows, deleteTenantStreams } from '../../infra/erasure';
import { inTransaction } from '../../infra/postgres/db';

/**
 * Identity's rule (README, Termination): last, in deleting_files, the tenant's memberships and
 * pending invitations, its roles, sessions (refresh tokens), one-time tokens and idempotency
 * records; a credential that remembered the tenant forgets it. Accounts are global (a person may
 * belong to other tenants) and stay; the tenant itself stays as a name with billing's terminated
 * subscription, so that its requests answer 402 subscription-terminated.
 */
export const identityEraser: Eraser = {
  domain: 'auth',
  phase: ERASURE_RULES.auth,
  erase: async (kernel, tenantId) => {
    await inTransaction(kernel.db, async (tx) => {
      await deleteTenantRows(tx, tenantId, [
        'identity.refresh_tokens',
        'identity.one_time_tokens',
        'rm.iam_members',
        'rm.iam_roles',
        'es.idempotency',
      ]);
      await tx.query('UPDATE identity.credentials SET remembered_tenant_id = NULL WHERE remembered_tenant_id = $1', [
        tenantId,
      ]);
      await deleteTenantStreams(tx, tenantId, ['identity.member', 'identity.role']);
    });
  },
};
