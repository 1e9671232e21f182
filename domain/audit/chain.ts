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
  /**
   * Walks one tenant's chain in seq order, a page at a time: call with each page; returns the first
   * break, or null with the head to continue from.
   */
  verifyPage: (head: ChainHead, rows: readonly AuditRow[]) => { head: ChainHead; broken: ChainBreak | null };
}

export const hashChain = (sha256: Sha256): HashChain => {
  const hashOf = (row: Omit<AuditRow, 'hash'>): string =>
    sha256(
      JSON.stringify([
        VERSION,
        row.prev_hash,
        row.tenant_id,
        String(row.seq),
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
      ]),
    );
  return {
    hashOf,
    chain: (head, rows) => chain(hashOf, head, rows),
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
