import type { AnonymizationRule, Overlay } from '../../domain/audit/anonymization';
import { ANONYMIZE_ACTION, OVERLAY_KEY_PURPOSE, overlayOf, ruleFor } from '../../domain/audit/anonymization';
import { auditErrors } from '../../domain/audit/errors';
import { auditRecord, stageAudit } from '../../infra/audit';
import type { Kernel } from '../../infra/kernel';
import type { Queryable } from '../../infra/postgres/db';
import { inTransaction } from '../../infra/postgres/db';
import { hmacSha256Hex } from '../../infra/security/digest';
import { recordsOfUser } from './lookups';

/** the keyed digest the overlay compares values by (a key derived from PLATFORM_SECRET_KEY) */
export const overlayDigest = (kernel: Pick<Kernel, 'engines'>): ((normalized: string) => string) =>
  hmacSha256Hex(kernel.engines.secrets.key(OVERLAY_KEY_PURPOSE));

/** the tenant's overlay: every anonymization requested, pending or completed (reads hide at once) */
export const loadOverlay = async (
  kernel: Pick<Kernel, 'engines' | 'db'>,
  tenantId: string,
): Promise<Overlay | null> => {
  const { rows } = await kernel.db.query<{ user_id: string; digests: string[]; lengths: number[] }>(
    'SELECT user_id, digests, lengths FROM audit.anonymizations WHERE tenant_id = $1',
    [tenantId],
  );
  const rules: AnonymizationRule[] = rows.map((r) => ({ userId: r.user_id, digests: r.digests, lengths: r.lengths }));
  return overlayOf(rules, overlayDigest(kernel));
};

export const hasPendingAnonymization = async (q: Queryable, tenantId: string): Promise<boolean> =>
  ((await q.query(`SELECT 1 FROM audit.anonymizations WHERE tenant_id = $1 AND status = 'pending' LIMIT 1`, [tenantId]))
    .rowCount ?? 0) > 0;

export interface Requester {
  tenantId: string;
  actorId: string;
  actorIp: string | null;
  actorUserAgent: string | null;
  traceId: string;
}

export interface AnonymizationView {
  anonymizationId: string;
  userId: string;
  status: 'pending' | 'completed';
  createdAt: string;
}

/**
 * POST /audit/anonymize (spec 002, anonymization design): the user's personal values come from
 * the directory of people (identity's read models; nobody's on a platform without identity); a user named only by financial records is refused (403), one unknown to
 * the tenant is 404, a second anonymization of the same user — concurrent or later — is 409. The
 * rule is stored (reads hide at once) and the ANONYMIZE record staged in the audit outbox in the
 * same transaction; the worker then rewrites the tenant's cold archives and completes it.
 */
export const anonymizeUser = async (kernel: Kernel, who: Requester, userId: string): Promise<AnonymizationView> => {
  const person = await kernel.people.person(kernel.db, who.tenantId, userId);
  const counts = await recordsOfUser(await kernel.analytics(), who.tenantId, userId);
  if (!person?.member && counts.financial + counts.other === 0) throw auditErrors.userNotFound();
  if (counts.other === 0 && counts.financial > 0) throw auditErrors.anonymizeFinancialRecord();
  const rule = ruleFor(userId, person?.values ?? [], overlayDigest(kernel));
  const id = kernel.ids.next();
  const createdAt = kernel.clock.now().toISOString();
  // the rule and its ANONYMIZE record commit together (the record is staged in the audit outbox)
  await inTransaction(kernel.db, async (tx) => {
    const { rowCount } = await tx.query(
      `INSERT INTO audit.anonymizations (id, tenant_id, user_id, status, digests, lengths, requested_by, created_at)
       VALUES ($1, $2, $3, 'pending', $4, $5, $6, $7) ON CONFLICT (tenant_id, user_id) DO NOTHING`,
      [id, who.tenantId, userId, rule.digests, rule.lengths, who.actorId, createdAt],
    );
    if (!rowCount) throw auditErrors.anonymizeConflict(userId);
    await stageAudit(tx, [
      auditRecord(
        {
          action: ANONYMIZE_ACTION,
          entityType: 'user',
          entityId: userId,
          tenantId: who.tenantId,
          actorId: who.actorId,
          actorIp: who.actorIp,
          actorUserAgent: who.actorUserAgent,
          traceId: who.traceId,
          timestamp: createdAt,
          meta: { anonymizationId: id, recordsHidden: counts.other, financialRecordsKept: counts.financial },
        },
        kernel.ids.next(),
      ),
    ]);
  });
  return { anonymizationId: id, userId, status: 'pending', createdAt };
};
