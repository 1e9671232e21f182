/**
 * What a file is, decided from its bytes (magic numbers), never from what the client says
 * (docs/decisions.md, Files): the detected type when the content has a signature; for content
 * without one, a plain-text type the client named if the bytes look like text (never HTML, SVG or
 * script), else text/plain for text and application/octet-stream for anything else.
 */
export const TEXT_TYPES = new Set(['text/plain', 'text/csv', 'application/json', 'text/markdown']);

/** images sharp decodes, processes and makes thumbnails of */
export const PROCESSABLE_IMAGES = new Set([
  'image/jpeg',
  'image/png',
  'image/webp',
  'image/gif',
  'image/avif',
  'image/tiff',
]);

/**
 * What a browser shows without running anything of the file's own: pictures it decodes, plain text,
 * sound and video. A signed link serves only these inline; anything else is an attachment.
 */
const INLINE_TYPES = new Set([
  ...PROCESSABLE_IMAGES,
  'image/bmp',
  'image/x-icon',
  'image/vnd.microsoft.icon',
  ...TEXT_TYPES,
]);
export const servesInline = (mimeType: string): boolean =>
  INLINE_TYPES.has(mimeType) || /^(audio|video)\//.test(mimeType);

/**
 * Types a browser renders as a document that can run script or load content: XML and every +xml
 * (SVG, XHTML, RSS…), HTML, script, Flash. File-type detects some of them (an SVG with its XML
 * prolog is application/xml): such a file is never sent under its own type.
 */
export const isActiveType = (mimeType: string): boolean =>
  /(^|[/+-])xml$|^text\/(html|javascript|ecmascript|xsl)$|^application\/(javascript|ecmascript|x-javascript|x-shockwave-flash)$/.test(
    mimeType,
  );

/** how a stored file goes out: inline only when asked and inert, its type unless that type is active */
export const servingOf = (
  mimeType: string,
  asked: 'inline' | 'attachment',
): { disposition: 'inline' | 'attachment'; contentType: string } => ({
  disposition: asked === 'inline' && servesInline(mimeType) ? 'inline' : 'attachment',
  contentType: isActiveType(mimeType) ? 'application/octet-stream' : mimeType,
});

export type MediaKind = 'image' | 'document';
export const kindOf = (mimeType: string): MediaKind => (mimeType.startsWith('image/') ? 'image' : 'document');

export interface SizeLimits {
  imageBytes: number;
  documentBytes: number;
}
export const limitFor = (mimeType: string, limits: SizeLimits): number =>
  kindOf(mimeType) === 'image' ? limits.imageBytes : limits.documentBytes;

/** the first bytes hold no NUL and decode as UTF-8 (a character cut at the end of the sample is allowed) */
export const looksLikeText = (sample: Buffer): boolean => {
  if (sample.length === 0 || sample.includes(0)) return false;
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(sample.subarray(0, trimmedUtf8End(sample)));
    return true;
  } catch {
    return false;
  }
};

/** where the sample ends without a partial UTF-8 sequence (at most 3 bytes are dropped) */
const trimmedUtf8End = (sample: Buffer): number => {
  for (let back = 1; back <= Math.min(3, sample.length); back += 1) {
    const byte = sample[sample.length - back]!;
    if ((byte & 0xc0) === 0x80) continue; // a continuation byte: look further back
    const needs = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 1;
    return needs > back ? sample.length - back : sample.length;
  }
  return sample.length;
};

export const resolveMimeType = (detected: string | null, declared: string | null, sample: Buffer): string => {
  if (detected) return detected;
  if (!looksLikeText(sample)) return 'application/octet-stream';
  const named = declared?.split(';')[0]?.trim().toLowerCase() ?? '';
  return TEXT_TYPES.has(named) ? named : 'text/plain';
};
