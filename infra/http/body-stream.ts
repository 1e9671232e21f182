import type { Readable, Transform } from 'node:stream';

/**
 * `source.pipe(stage)` for a request body on its way to a parser (the edge's JSON depth guard, the
 * split gateway's copy of the bytes). Two things pipe() alone gets wrong:
 * - a failure of the source (the client went away mid-body) fails the stage too, so the parser
 *   reading it stops instead of waiting for ever;
 * - the stage always has a listener for its error: the parser stops listening once it has refused
 *   the body (413, malformed JSON), the client can still go away after that, and an 'error' event
 *   nobody hears ends the process (DESIGN.md mechanism 11). A parser still reading sees the error
 *   through its own listener.
 */
export const pipeBody = <T extends Transform>(source: Readable, stage: T): T => {
  stage.on('error', () => undefined);
  source.on('error', (error) => stage.destroy(error));
  return source.pipe(stage);
};
