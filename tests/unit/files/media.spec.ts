import { describe, expect, it } from 'vitest';
import { isActiveType, kindOf, limitFor, looksLikeText, resolveMimeType, servingOf } from '../../../domain/files/media';

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

describe('how a stored file is served', () => {
  it('is inline, under its own type, only for pictures, plain text, sound and video', () => {
    for (const type of [
      'image/png',
      'image/jpeg',
      'image/webp',
      'text/plain',
      'text/csv',
      'application/json',
      'audio/mpeg',
      'video/mp4',
    ])
      expect([type, servingOf(type, 'inline')]).toEqual([type, { disposition: 'inline', contentType: type }]);
  });

  it('is an attachment for anything else, even when a link asks for inline', () => {
    for (const type of ['application/pdf', 'application/zip', 'application/octet-stream', 'text/calendar', 'text/vtt'])
      expect([type, servingOf(type, 'inline')]).toEqual([type, { disposition: 'attachment', contentType: type }]);
  });

  it('never sends XML, SVG, HTML, script or Flash under its own type: an octet-stream attachment', () => {
    for (const type of [
      'application/xml',
      'text/xml',
      'image/svg+xml',
      'application/xhtml+xml',
      'application/rss+xml',
      'text/html',
      'text/javascript',
      'application/javascript',
      'application/x-shockwave-flash',
    ]) {
      expect([type, isActiveType(type)]).toEqual([type, true]);
      for (const asked of ['inline', 'attachment'] as const)
        expect([type, servingOf(type, asked)]).toEqual([
          type,
          { disposition: 'attachment', contentType: 'application/octet-stream' },
        ]);
    }
    // office documents are zip containers a browser downloads, whatever "xml" their names hold
    expect(isActiveType('application/vnd.openxmlformats-officedocument.wordprocessingml.document')).toBe(false);
  });
});
