/**
 * One byte range of an HTTP Range header (RFC 9110 §14): bytes=a-b, bytes=a- or bytes=-n,
 * resolved against the object's size. Several ranges are answered whole (a server may ignore
 * Range); a range that starts beyond the end is unsatisfiable (416).
 */
export type RangeRequest = { kind: 'whole' } | { kind: 'part'; start: number; end: number } | { kind: 'unsatisfiable' };

export const resolveRange = (header: string | undefined, size: number): RangeRequest => {
  if (!header) return { kind: 'whole' };
  const match = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!match || (match[1] === '' && match[2] === '')) return { kind: 'whole' };
  const [first, last] = [match[1]!, match[2]!];
  if (first === '') {
    const suffix = Number(last);
    if (suffix === 0 || size === 0) return { kind: 'unsatisfiable' };
    return { kind: 'part', start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(first);
  const end = last === '' ? size - 1 : Math.min(Number(last), size - 1);
  if (!Number.isSafeInteger(start) || start >= size) return { kind: 'unsatisfiable' };
  if (end < start) return { kind: 'whole' }; // a malformed range is ignored
  return { kind: 'part', start, end };
};
