import type { AuditRecordView } from './record';

/**
 * The anonymization overlay (spec 002: an ANONYMIZE record is appended; queries read the latest
 * version so original values are not reachable through any endpoint). Stored records never
 * change — the hash chain stays verifiable — and every read applies the tenant's rules: for each
 * anonymized user, records they acted in lose their address (0.0.0.0) and user agent, and any
 * value equal to their email or names (or an email inside a longer text) becomes the marker.
 * Financial records (money.*) are never anonymized.
 *
 * Rules hold no personal data: values are matched by a keyed digest (HMAC with a platform key)
 * and their lengths, so the overlay cannot be read back into what it hides.
 */
export const REDACTED = '[redacted]';
export const REDACTED_IP = '0.0.0.0';
export const ANONYMIZE_ACTION = 'audit.user.anonymized';
/** the purpose of the platform key (infra/secrets.ts) the overlay's digests are keyed with */
export const OVERLAY_KEY_PURPOSE = 'audit.anonymization.v1';

export interface AnonymizationRule {
  userId: string;
  /** digests of the normalized values to hide */
  digests: readonly string[];
  lengths: readonly number[];
}

export interface Overlay {
  users: ReadonlySet<string>;
  digests: ReadonlySet<string>;
  lengths: ReadonlySet<number>;
  digest: (normalized: string) => string;
}

/** how values are compared: case and surrounding space do not matter */
export const normalize = (value: string): string => value.trim().toLowerCase();

export const isFinancial = (action: string): boolean => action.startsWith('money.');

/** the rule hiding these personal values (email, first name, last name, full name, linked identities) */
export const ruleFor = (
  userId: string,
  values: readonly string[],
  digest: (normalized: string) => string,
): AnonymizationRule => {
  const normalized = [...new Set(values.map(normalize).filter((v) => v.length > 0))];
  return { userId, digests: normalized.map(digest), lengths: [...new Set(normalized.map((v) => v.length))] };
};

export const overlayOf = (
  rules: readonly AnonymizationRule[],
  digest: (normalized: string) => string,
): Overlay | null =>
  rules.length === 0
    ? null
    : {
        users: new Set(rules.map((r) => r.userId)),
        digests: new Set(rules.flatMap((r) => r.digests)),
        lengths: new Set(rules.flatMap((r) => r.lengths)),
        digest,
      };

const EMAIL = /[^\s@<>"',;:()[\]]+@[^\s@<>"',;:()[\]]+\.[^\s@<>"',;:()[\]]+/g;

const hides = (overlay: Overlay, value: string): boolean => {
  const n = normalize(value);
  return overlay.lengths.has(n.length) && overlay.digests.has(overlay.digest(n));
};

const redactText = (overlay: Overlay, value: string): string => {
  if (hides(overlay, value)) return REDACTED;
  return value.includes('@') ? value.replace(EMAIL, (email) => (hides(overlay, email) ? REDACTED : email)) : value;
};

const redactValue = (overlay: Overlay, value: unknown): unknown => {
  if (typeof value === 'string') return redactText(overlay, value);
  if (Array.isArray(value)) return value.map((v) => redactValue(overlay, v));
  if (value && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, redactValue(overlay, v)]));
  return value;
};

const actedBy = (overlay: Overlay, actorId: string): boolean => {
  if (overlay.users.has(actorId)) return true;
  const impersonated = / \(by [^)]+\)$/.exec(actorId);
  return impersonated !== null && overlay.users.has(actorId.slice(0, impersonated.index));
};

/** the record as every endpoint shows it under the tenant's overlay */
export const redact = (record: AuditRecordView, overlay: Overlay | null): AuditRecordView => {
  if (!overlay || isFinancial(record.action)) return record;
  const actor = actedBy(overlay, record.actorId);
  const object = (v: Record<string, unknown> | null) =>
    v === null ? null : (redactValue(overlay, v) as Record<string, unknown>);
  return {
    ...record,
    actorIp: actor && record.actorIp !== null ? REDACTED_IP : record.actorIp,
    actorUserAgent: actor ? null : record.actorUserAgent,
    before: object(record.before),
    after: object(record.after),
    meta: object(record.meta),
  };
};
