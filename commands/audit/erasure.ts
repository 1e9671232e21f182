import { ANONYMIZE_ACTION, ruleFor } from '../../domain/audit/anonymization';
import { ERASURE_RULES } from '../../domain/shared/erasure';
import { auditRecord, stageAudit } from '../../infra/audit';
import type { Eraser } from '../../infra/erasure';
import { inTransaction } from '../../infra/postgres/db';
import { overlayDigest } from './anonymize';

/**
 * The audit service's rule (README, Termination): the log is kept (retention as configured) and
 * the personal data in it anonymized — an anonymization of every member of the tenant, as POST
 * /audit/anonymize makes one (reads hide at once, the worker rewrites the cold archives),
 * financial records kept whole as they always are. It runs in deleting_records, while identity
 * still knows the members and their personal values (identity erases the members last).
 */
export const auditEraser: Eraser = {
  domain: 'audit',
  phase: ERASURE_RULES.audit,
  erase: async (kernel, tenantId) => {
    const digest = overlayDigest(kernel);
    // the tenant's members as the directory of people tells them (none on a platform without identity)
    for (const userId of await kernel.people.memberIds(kernel.db, tenantId)) {
      const person = await kernel.people.person(kernel.db, tenantId, userId);
      const rule = ruleFor(userId, person?.values ?? [], digest);
      const id = kernel.ids.next();
      const now = kernel.clock.now().toISOString();
      await inTransaction(kernel.db, async (tx) => {
        const { rowCount } = await tx.query(
          `INSERT INTO audit.anonymizations (id, tenant_id, user_id, status, digests, lengths, requested_by, created_at)
           VALUES ($1, $2, $3, 'pending', $4, $5, 'system', $6) ON CONFLICT (tenant_id, user_id) DO NOTHING`,
          [id, tenantId, userId, rule.digests, rule.lengths, now],
        );
        if (!rowCount) return;
        await stageAudit(tx, [
          auditRecord(
            {
              action: ANONYMIZE_ACTION,
              entityType: 'user',
              entityId: userId,
              tenantId,
              actorId: 'system',
              timestamp: now,
              meta: { anonymizationId: id, reason: 'tenant_terminated' },
            },
            kernel.ids.next(),
          ),
        ]);
      });
    }
  },
};
