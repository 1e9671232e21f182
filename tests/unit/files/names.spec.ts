import { describe, expect, it } from 'vitest';
import { contentDisposition, safeFileName } from '../../../domain/files/names';

describe('a file name as a client sends it', () => {
  it('loses NUL, CR, LF and other control characters', () =>
    expect(safeFileName('in\u0000voice\r\nSet-Cookie: x=1.pdf')).toBe('invoiceSet-Cookie: x=1.pdf'));
  it('keeps only its last path segment: no ../ climbing', () => {
    expect(safeFileName('../../etc/passwd')).toBe('passwd');
    expect(safeFileName('..\\..\\windows\\system32\\cmd.exe')).toBe('cmd.exe');
    expect(safeFileName('../')).toBe('file');
  });
  it('keeps quotes in the stored name', () =>
    expect(safeFileName('my "best" report.pdf')).toBe('my "best" report.pdf'));
  it('loses leading dots (no hidden files)', () => expect(safeFileName('...bashrc')).toBe('bashrc'));
  it('is cut to 255 bytes of UTF-8 on a character boundary, keeping its extension', () => {
    const long = `${'é'.repeat(150)}.pdf`; // 304 bytes
    const safe = safeFileName(long);
    expect(Buffer.byteLength(safe)).toBeLessThanOrEqual(255);
    expect(safe.endsWith('.pdf')).toBe(true);
    expect(safe).not.toContain('\uFFFD');
  });
  it('becomes "file" when nothing is left', () => expect(safeFileName('\u0000\r\n')).toBe('file'));
});

describe('Content-Disposition', () => {
  it('quotes a plain-ASCII fallback and gives the exact name as filename*', () =>
    expect(contentDisposition('attachment', 'résumé "final".pdf')).toBe(
      `attachment; filename="r_sum_ _final_.pdf"; filename*=UTF-8''r%C3%A9sum%C3%A9%20%22final%22.pdf`,
    ));
  it('cannot be broken by a name: no CR, LF, unescaped quote or extra parameter', () => {
    const header = contentDisposition('inline', 'a"; filename="evil.html\r\nX-Injected: 1');
    expect(header).not.toMatch(/[\r\n]/);
    expect(header.match(/"/g)).toHaveLength(2);
    expect(header).toMatch(/^inline; filename="[^"]*"; filename\*=UTF-8''[A-Za-z0-9%._~!-]+$/);
  });
});
