import type { FastifyReply } from 'fastify';
import { contentDisposition } from '../../domain/files/names';
import { resolveRange } from '../../domain/files/range';
import { filesErrors } from '../../domain/files/errors';
import { ObjectNotFoundError, type ObjectStore } from '../../infra/objects';

export interface Served {
  key: string;
  mimeType: string;
  /** the name offered to the browser (cleaned again by contentDisposition) */
  name: string;
  disposition: 'inline' | 'attachment';
  /** the Range header of the request */
  range: string | undefined;
  /** how long a browser may keep it (signed links: until they expire); 0 for no-store */
  maxAgeSeconds: number;
}

/**
 * A stored object as an HTTP answer: its type as detected at upload, never sniffed (the platform's
 * nosniff and default-src 'none' policy apply), a Content-Disposition that no file name can break,
 * and one byte range when asked (206, or 416 beyond the end).
 */
export const sendObject = async (reply: FastifyReply, objects: ObjectStore, served: Served): Promise<FastifyReply> => {
  const head = await objects.head(served.key);
  if (!head) throw filesErrors.fileNotFound();
  const range = resolveRange(served.range, head.size);
  if (range.kind === 'unsatisfiable') throw filesErrors.rangeNotSatisfiable(head.size);
  reply
    .header('accept-ranges', 'bytes')
    .header('content-disposition', contentDisposition(served.disposition, served.name))
    .header('x-content-type-options', 'nosniff')
    .header('cache-control', served.maxAgeSeconds > 0 ? `private, max-age=${served.maxAgeSeconds}` : 'no-store')
    .header('etag', head.etag)
    .type(served.mimeType);
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
