import type { FastifyReply } from 'fastify';
import { contentDisposition } from '../../domain/files/names';
import { resolveRange } from '../../domain/files/range';
import { filesErrors } from '../../domain/files/errors';
import { servingOf } from '../../domain/files/media';
import { ObjectNotFoundError, type ObjectStore } from '../../infra/objects';

export interface Served {
  key: string;
  mimeType: string;
  /** the name offered to the browser (cleaned again by contentDisposition) */
  name: string;
  /** what the route asks for; an active or unknown type is an attachment whatever is asked */
  disposition: 'inline' | 'attachment';
  /** the Range header of the request */
  range: string | undefined;
  /** how long a browser may keep it (signed links: until they expire); 0 for no-store */
  maxAgeSeconds: number;
}

/**
 * The policy of a file's bytes: nothing loads, nothing runs, no form, no frame around it, and the
 * sandbox makes the document an opaque origin — should a browser render something, it is not the
 * platform's origin and reaches none of its cookies or storage.
 */
const FILE_POLICY = "default-src 'none'; sandbox; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/**
 * A stored object as an HTTP answer: its type as detected at upload, never sniffed (nosniff and
 * the file policy above); inline only for what a browser shows inertly (pictures, plain text,
 * sound, video), and active types (XML, SVG, HTML, script) as application/octet-stream attachments
 * (domain/files/media.ts servingOf); a Content-Disposition that no file name can break, and one
 * byte range when asked (206, or 416 beyond the end).
 */
export const sendObject = async (reply: FastifyReply, objects: ObjectStore, served: Served): Promise<FastifyReply> => {
  const head = await objects.head(served.key);
  if (!head) throw filesErrors.fileNotFound();
  const range = resolveRange(served.range, head.size);
  if (range.kind === 'unsatisfiable') throw filesErrors.rangeNotSatisfiable(head.size);
  const serving = servingOf(served.mimeType, served.disposition);
  reply
    .header('accept-ranges', 'bytes')
    .header('content-disposition', contentDisposition(serving.disposition, served.name))
    .header('x-content-type-options', 'nosniff')
    .header('content-security-policy', FILE_POLICY)
    .header('cache-control', served.maxAgeSeconds > 0 ? `private, max-age=${served.maxAgeSeconds}` : 'no-store')
    .header('etag', head.etag)
    .type(serving.contentType);
  try {
    if (range.kind === 'part') {
      const body = await objects.get(served.key, { range: { start: range.start, end: range.end } });
      return reply
        .code(206)
        .header('content-range', `bytes ${range.start}-${range.end}/${head.size}`)
        .header('content-length', String(range.end - range.start + 1))
        .send(body);
    }
    const body = await objects.get(served.key);
    return reply.code(200).header('content-length', String(head.size)).send(body);
  } catch (error) {
    if (error instanceof ObjectNotFoundError) throw filesErrors.fileNotFound();
    throw error;
  }
};
