import { describe, expect, it } from 'vitest';
import { kindOf, limitFor, looksLikeText, resolveMimeType } from '../../../domain/files/media';

describe('the type of an upload', () => {
  it('is the type its bytes say, whatever the client named', () =>
    expect(resolveMimeType('application/pdf', 'image/png', Buffer.from('%PDF'))).toBe('application/pdf'));
  it('is a plain-text type the client named when the bytes are text without a signature', () =>
    expect(resolveMimeType(null, 'text/csv; charset=utf-8', Buffer.from('a,b\n1,2\n'))).toBe('text/csv'));
  it('is never HTML or SVG because a client said so: such text is text/plain', () => {
    expect(resolveMimeType(null, 'text/html', Buffer.from('<script>alert(1)</script>'))).toBe('text/plain');
    expect(resolveMimeType(null, 'image/svg+xml', Buffer.from('<svg onload="alert(1)"/>'))).toBe('text/plain');
  });
  it('is application/octet-stream for binary without a signature', () =>
    expect(resolveMimeType(null, 'image/png', Buffer.from([0, 1, 2, 0xff]))).toBe('application/octet-stream'));
  it('tells text from binary, allowing a character cut at the end of the sample', () => {
    expect(looksLikeText(Buffer.from('héllo').subarray(0, 2))).toBe(true);
    expect(looksLikeText(Buffer.from([0x68, 0xff, 0x68]))).toBe(false);
    expect(looksLikeText(Buffer.alloc(0))).toBe(false);
  });
  it('decides the size limit: images 10 MB, everything else 50 MB', () => {
    const limits = { imageBytes: 10, documentBytes: 50 };
    expect([
      kindOf('image/png'),
      limitFor('image/png', limits),
      kindOf('application/pdf'),
      limitFor('application/pdf', limits),
    ]).toEqual(['image', 10, 'document', 50]);
  });
});
