import type { AuditRow, UnchainedRow } from './rows';
import { isoOf } from './rows';

/**
 * Tamper evidence: the records of a tenant form a hash chain in append order. Each record's hash
 * is SHA-256 over the previous record's hash and the record's stored fields, so altering, removing
 * or reordering one record breaks every link after it. Two chains per tenant: `log` (records of
 * platform.audit.events, in the order the audit consumer appends them) and `domain` (the audit
 * view of domain events, in the global log's order — a rebuild recomputes the very same hashes).
 * Pure: the SHA-256 function arrives from outside (infra/security/digest.ts), bound once by each
 * side that links or checks records (commands/audit/chain.ts, projections/audit/index.ts).
 */
export const GENESIS = '0'.repeat(64);
const VERSION = 'audit-chain-v1';

export interface ChainHead {
  seq: number;
  hash: string;
}
export const START: ChainHead = { seq: 0, hash: GENESIS };

/** SHA-256 of a text, hex */
export type Sha256 = (text: string) => string;

export type ChainBreak = { seq: string; id: string; reason: 'altered' | 'broken-link' | 'gap' };

export interface HashChain {
  /** the hash of a record at its place: covers the previous hash and every stored field */
  hashOf: (row: Omit<AuditRow, 'hash'>) => string;
  /** appends rows of one tenant after its head; returns the chained rows and the new head */
  chain: (head: ChainHead, rows: readonly UnchainedRow[]) => { rows: AuditRow[]; head: ChainHead };
  /** chain() for a bulk writer: the same links and hashes, each record as its fields' JSON text */
  chainLinks: (head: ChainHead, rows: readonly UnchainedRow[]) => { links: ChainedLink[]; head: ChainHead };
  /**
   * Walks one tenant's chain in seq order, a page at a time: call with each page; returns the first
   * break, or null with the head to continue from.
   */
  verifyPage: (head: ChainHead, rows: readonly AuditRow[]) => { head: ChainHead; broken: ChainBreak | null };
}

/**
 * The columns of a record that its hash covers after its place (prev_hash, tenant_id, seq), in the
 * order the hash takes them: `fields` of a ChainedLink is their JSON text.
 */
export const LINK_FIELDS = [
  'id',
  'action',
  'entity_type',
  'entity_id',
  'actor_id',
  'actor_ip',
  'actor_user_agent',
  'before',
  'after',
  'meta',
  'trace_id',
  'timestamp',
] as const;

/**
 * A record at its place in a chain, as a bulk writer sends it: its links, and the JSON text of its
 * LINK_FIELDS without the brackets (the timestamp as ISO 8601) — the very text its hash covers, so
 * a JSONCompactEachRow line is spliced from it instead of encoding the record a second time.
 */
export interface ChainedLink {
  tenant_id: string;
  seq: number;
  prev_hash: string;
  hash: string;
  fields: string;
}

// JSON.stringify of an array is its members' texts joined by commas: the hash's text is the JSON of
// [VERSION, prev_hash, tenant_id, seq, ...LINK_FIELDS], built from the fields' text once.
const fieldsText = (row: Omit<UnchainedRow, 'tenant_id'>): string =>
  JSON.stringify([
    row.id,
    row.action,
    row.entity_type,
    row.entity_id,
    row.actor_id,
    row.actor_ip,
    row.actor_user_agent,
    row.before,
    row.after,
    row.meta,
    row.trace_id,
    isoOf(row.timestamp),
  ]).slice(1, -1);
const hashText = (prevHash: string, tenantId: string, seq: string, fields: string): string =>
  `${JSON.stringify([VERSION, prevHash, tenantId, seq]).slice(0, -1)},${fields}]`;

export const hashChain = (sha256: Sha256): HashChain => {
  const hashOf = (row: Omit<AuditRow, 'hash'>): string =>
    sha256(hashText(row.prev_hash, row.tenant_id, String(row.seq), fieldsText(row)));
  return {
    hashOf,
    chain: (head, rows) => chain(hashOf, head, rows),
    chainLinks: (head, rows) => {
      let { seq, hash } = head;
      const links = rows.map((r): ChainedLink => {
        seq += 1;
        const fields = fieldsText(r);
        const prev = hash;
        hash = sha256(hashText(prev, r.tenant_id, String(seq), fields));
        return { tenant_id: r.tenant_id, seq, prev_hash: prev, hash, fields };
      });
      return { links, head: { seq, hash } };
    },
    verifyPage: (head, rows) => verifyPage(hashOf, head, rows),
  };
};

const chain = (
  hashOf: HashChain['hashOf'],
  head: ChainHead,
  rows: readonly UnchainedRow[],
): { rows: AuditRow[]; head: ChainHead } => {
  let { seq, hash } = head;
  const chained = rows.map((r) => {
    seq += 1;
    const linked = { ...r, seq: String(seq), prev_hash: hash };
    hash = hashOf(linked);
    return { ...linked, hash };
  });
  return { rows: chained, head: { seq, hash } };
};

const verifyPage = (
  hashOf: HashChain['hashOf'],
  head: ChainHead,
  rows: readonly AuditRow[],
): { head: ChainHead; broken: ChainBreak | null } => {
  let current = head;
  for (const row of rows) {
    const seq = Number(row.seq);
    if (seq !== current.seq + 1) return { head: current, broken: { seq: row.seq, id: row.id, reason: 'gap' } };
    if (row.prev_hash !== current.hash)
      return { head: current, broken: { seq: row.seq, id: row.id, reason: 'broken-link' } };
    if (hashOf(row) !== row.hash) return { head: current, broken: { seq: row.seq, id: row.id, reason: 'altered' } };
    current = { seq, hash: row.hash };
  }
  return { head: current, broken: null };
};
