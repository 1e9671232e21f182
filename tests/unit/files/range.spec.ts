import { describe, expect, it } from 'vitest';
import { resolveRange } from '../../../domain/files/range';

describe('a Range header against 1,000 bytes', () => {
  it.each([
    [undefined, { kind: 'whole' }],
    ['bytes=0-99', { kind: 'part', start: 0, end: 99 }],
    ['bytes=900-', { kind: 'part', start: 900, end: 999 }],
    ['bytes=-100', { kind: 'part', start: 900, end: 999 }],
    ['bytes=990-2000', { kind: 'part', start: 990, end: 999 }],
    ['bytes=-5000', { kind: 'part', start: 0, end: 999 }],
    ['bytes=1000-', { kind: 'unsatisfiable' }],
    ['bytes=-0', { kind: 'unsatisfiable' }],
    ['bytes=0-9,20-29', { kind: 'whole' }],
    ['items=0-9', { kind: 'whole' }],
    ['bytes=50-10', { kind: 'whole' }],
  ])('%s → %j', (header, expected) => expect(resolveRange(header, 1000)).toEqual(expected));
  it('makes any range of an empty object unsatisfiable', () =>
    expect(resolveRange('bytes=0-0', 0)).toEqual({ kind: 'unsatisfiable' }));
});
