/**
 * Delivery by entity key (spec 002: "partition key is entityId (ordering per entity only)"): within a
 * partition, events of different keys are handed over concurrently, each key's strictly one after
 * another. A failed attempt holds back its key only (its later events wait behind it); the cursor's
 * commit point is the first event not finished, so a crash delivers again rather than loses.
 */

/** a key held back by a failed attempt at its event `seq`, until retryAt (epoch ms) */
export interface Hold {
  seq: number;
  attempts: number;
  retryAt: number;
  error: string;
}
export type Holds = Record<string, Hold>;

/** the keys whose retry is not yet due: none of their events is read or handed over */
export const blockedKeys = (holds: Holds, now: number): string[] =>
  Object.entries(holds)
    .filter(([, h]) => h.retryAt > now)
    .map(([key]) => key);

export interface CursorState {
  /** the first event not finished: delivery starts again here after a crash */
  nextSeq: number;
  /** events at or after nextSeq already finished (delivered, dead-lettered, skipped) */
  doneSeqs: number[];
  /** the first event neither finished nor held back: a head beyond it is new work */
  scanSeq: number;
  /** the earliest retry due, when some key is held back */
  retryAt: number | null;
}

/**
 * Where a partition's cursor stands: `pending` are events read but not finished (not started yet, or
 * in flight), `holds` the keys held back (each at its first unfinished event), `frontier` the first
 * event not read yet, `finished` what is finished at or after the cursor's previous position.
 */
export const cursorState = (o: {
  pending: Iterable<number>;
  holds: Holds;
  frontier: number;
  finished: Iterable<number>;
}): CursorState => {
  const pending = [...o.pending];
  const held = Object.values(o.holds);
  const scanSeq = Math.min(o.frontier, ...pending);
  const nextSeq = Math.min(scanSeq, ...held.map((h) => h.seq));
  return {
    nextSeq,
    doneSeqs: [...o.finished].filter((s) => s >= nextSeq).sort((a, b) => a - b),
    scanSeq,
    retryAt: held.length ? Math.min(...held.map((h) => h.retryAt)) : null,
  };
};
