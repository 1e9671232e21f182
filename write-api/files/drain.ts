import type { FastifyRequest } from 'fastify';

/** most of a refused upload read (and dropped) so that its answer arrives whole; a client sending more loses its connection */
export const DRAIN_LIMIT = 64 * 1024 * 1024;

/**
 * A refusal in the middle of an upload: the rest of the body is read and dropped rather than the
 * connection closed under it, because a peer still sending can lose an answer to a reset (the
 * gateway's proxy would turn it into a 502). Past DRAIN_LIMIT the connection goes.
 */
export const drainRest = (request: FastifyRequest): void => {
  const body = request.bodyStream;
  if (!body || body.readableEnded) return;
  let drained = 0;
  body.on('data', (chunk: Buffer) => {
    drained += chunk.length;
    if (drained > DRAIN_LIMIT) request.raw.destroy();
  });
  body.on('error', () => undefined);
  body.resume();
};
