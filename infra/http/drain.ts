import type { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';

/** most of a refused upload read (and dropped) so that its answer arrives whole; a client sending more loses its connection */
const DRAIN_LIMIT = 64 * 1024 * 1024;

/** a body declared larger than is worth reading to drop it */
const declaredOverLimit = (request: FastifyRequest): boolean =>
  Number(request.headers['content-length'] ?? 0) > DRAIN_LIMIT;

/** reads what is left of a body and drops it; past DRAIN_LIMIT the connection goes */
const dropRest = (request: FastifyRequest, body: Readable): void => {
  let drained = 0;
  body.on('data', (chunk: Buffer) => {
    drained += chunk.length;
    if (drained > DRAIN_LIMIT) request.raw.destroy();
  });
  body.on('error', () => undefined);
  body.resume();
};

/**
 * A refusal in the middle of an upload: the rest of the body is read and dropped rather than the
 * connection closed under it, because a peer still sending can lose an answer to a reset (a
 * client sees EPIPE instead of the problem; the gateway's proxy would turn it into a 502).
 */
export const drainRest = (request: FastifyRequest): void => {
  const body = request.bodyStream;
  if (body && !body.readableEnded) dropRest(request, body);
};

/**
 * An answer given before the streamed body was read to its end (a refusal): a body small enough
 * is drained, so the connection stays usable and the client reads the answer; one declared
 * larger is not worth reading, the connection closes with the answer.
 */
export const answeringBeforeTheBody = (request: FastifyRequest, reply: FastifyReply): void => {
  if (!request.bodyStream || request.bodyStream.readableEnded) return;
  if (declaredOverLimit(request)) reply.header('connection', 'close');
  else drainRest(request);
};

/**
 * The rest of a request body the platform will not read (Fastify refused it: over the body limit
 * by its declared length, or a parser's error), dropped as it arrives when its declared length is
 * at most DRAIN_LIMIT: then the connection can stay open and a client still sending reads the
 * answer instead of a reset. False when it cannot be (no declared length, or a larger one): the
 * connection must close.
 */
export const drainUnreadBody = (request: FastifyRequest): boolean => {
  const raw = request.raw;
  if (raw.complete) return true;
  if (request.headers['content-length'] === undefined || declaredOverLimit(request)) return false;
  raw.unpipe(); // from a parser or guard that stopped reading
  dropRest(request, raw);
  return true;
};
