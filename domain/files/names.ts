import { ORIGINAL_NAME_MAX_BYTES } from './constants';

/**
 * File names as clients give them are data, never paths or header text: control characters (NUL,
 * CR, LF, …) are dropped, only the last path segment is kept (no "../"), the name is cut to 255
 * bytes of UTF-8 keeping its extension, and an empty result becomes "file". Quotes are kept in the
 * stored name and escaped where a header carries it (contentDisposition).
 */
const MAX_STORED_BYTES = 255;
// eslint-disable-next-line no-control-regex -- control characters are exactly what is removed
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g;

const utf8Length = (text: string): number => Buffer.byteLength(text, 'utf8');

/** the longest prefix of text (whole characters) within maxBytes of UTF-8 */
const cutToBytes = (text: string, maxBytes: number): string => {
  let out = '';
  for (const char of text) {
    if (utf8Length(out) + utf8Length(char) > maxBytes) break;
    out += char;
  }
  return out;
};

export const safeFileName = (raw: string): string => {
  const cleaned = raw.replace(CONTROL, '');
  const last = cleaned.split(/[/\\]/).pop() ?? '';
  const trimmed = last.trim().replace(/^\.+/, '').trim();
  if (trimmed === '') return 'file';
  if (utf8Length(trimmed) <= MAX_STORED_BYTES) return trimmed;
  const dot = trimmed.lastIndexOf('.');
  const extension = dot > 0 && trimmed.length - dot <= 16 ? trimmed.slice(dot) : '';
  const base = cutToBytes(
    trimmed.slice(0, trimmed.length - extension.length),
    MAX_STORED_BYTES - utf8Length(extension),
  );
  return `${base}${extension}`;
};

/** a name as received is checked for length before cleaning: megabytes of name are refused, not cut */
export const originalNameTooLong = (raw: string): boolean => utf8Length(raw) > ORIGINAL_NAME_MAX_BYTES;

/** RFC 5987 encoding of a header parameter value: UTF-8, percent-encoded beyond attr-char */
const encodeRfc5987 = (text: string): string =>
  encodeURIComponent(text).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

/**
 * Content-Disposition with a plain-ASCII filename (quotes, backslashes and anything outside
 * printable ASCII replaced by "_") and the exact name as filename* (RFC 6266), so no name can end
 * the header, add a parameter or smuggle a line.
 */
export const contentDisposition = (kind: 'attachment' | 'inline', name: string): string => {
  const safe = safeFileName(name);
  const ascii = safe.replace(/[^\x20-\x7e]|["\\%;]/g, '_');
  return `${kind}; filename="${ascii}"; filename*=UTF-8''${encodeRfc5987(safe)}`;
};
