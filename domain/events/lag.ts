/**
 * Consumer lag alerts (spec 002, Events: "over 1 minute info, over 5 minutes warning to tenant
 * admin, over 15 minutes critical; a bulk-import spike suppresses warnings for 30 minutes"). The lag
 * of a subscription is the age of the oldest of its tenant's events it has not processed yet.
 */
export type LagLevel = 'ok' | 'info' | 'warning' | 'critical';

export const LAG_THRESHOLDS_MS = { info: 60_000, warning: 5 * 60_000, critical: 15 * 60_000 } as const;
export const BULK_IMPORT_SUPPRESSION_MS = 30 * 60_000;

const rank: Record<LagLevel, number> = { ok: 0, info: 1, warning: 2, critical: 3 };

export const lagLevelOf = (lagMs: number): LagLevel =>
  lagMs > LAG_THRESHOLDS_MS.critical
    ? 'critical'
    : lagMs > LAG_THRESHOLDS_MS.warning
      ? 'warning'
      : lagMs > LAG_THRESHOLDS_MS.info
        ? 'info'
        : 'ok';

export interface LagAlertState {
  /** the level the tenant's admins were last told of (null: none since the lag was last ok) */
  notified: LagLevel | null;
}

export interface LagDecision {
  level: LagLevel;
  /** write a log line at this level (once per escalation) */
  log: LagLevel | null;
  /** tell the tenant's admins (warning and critical; a warning is held back during a bulk import) */
  notify: 'warning' | 'critical' | null;
  /** the level to remember as notified */
  notified: LagLevel | null;
}

/**
 * What an alert check does: each level is announced once when the lag reaches it (a log line; the
 * tenant's admins are notified from warning on), never again while it stays there; back under a
 * minute, the lag is ok and the next rise is announced afresh. During a bulk import a warning is
 * only logged — and remembered as not notified, so that it is sent if the lag is still there once
 * the suppression ends — while critical is always notified.
 */
export const decideLagAlert = (lagMs: number, state: LagAlertState, bulkImport: boolean): LagDecision => {
  const level = lagLevelOf(lagMs);
  if (level === 'ok') return { level, log: state.notified ? 'ok' : null, notify: null, notified: null };
  const notified = state.notified ?? 'ok';
  if (rank[level] <= rank[notified]) return { level, log: null, notify: null, notified: state.notified };
  if (level === 'info') return { level, log: 'info', notify: null, notified: 'info' };
  if (level === 'warning' && bulkImport) {
    return { level, log: notified === 'info' ? null : 'info', notify: null, notified: 'info' };
  }
  return { level, log: level, notify: level, notified: level };
};
