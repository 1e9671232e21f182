import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { commonErrors } from '../../../domain/shared/errors';
import { judge } from '../../../infra/runtime/process-policy';

/** the error node throws for an 'error' event nobody listens to, caught where it is thrown */
const unheardErrorEvent = (): unknown => {
  const stream = new PassThrough();
  try {
    stream.emit('error', new Error('the client went away'));
  } catch (error) {
    return error;
  }
  throw new Error('emit did not throw');
};

describe('an error that reached the top of the process', () => {
  it('is contained when a promise rejected with no handler, whatever the error', () => {
    expect(judge(new TypeError('x is undefined'), 'unhandledRejection').keepServing).toBe(true);
    expect(judge('a string', 'unhandledRejection').keepServing).toBe(true);
  });

  it("is contained when it is an 'error' event of a stream or socket nobody listened to", () => {
    expect(judge(unheardErrorEvent(), 'uncaughtException')).toEqual({
      keepServing: true,
      reason: "an 'error' event of one stream or socket had no listener",
    });
  });

  it('is contained when it is the failure of one I/O operation', () => {
    for (const code of [
      'EPIPE',
      'ECONNRESET',
      'ETIMEDOUT',
      'ERR_STREAM_PREMATURE_CLOSE',
      'HPE_INVALID_EOF_STATE',
      'Z_DATA_ERROR',
      'WS_ERR_INVALID_UTF8',
    ])
      expect(judge(Object.assign(new Error(code), { code }), 'uncaughtException').keepServing, code).toBe(true);
  });

  it("is contained when it is a refusal from an error catalog (one request's input)", () => {
    expect(judge(commonErrors.payloadTooLarge(10), 'uncaughtException').keepServing).toBe(true);
  });

  it('is fatal when it is a programming error thrown out of a callback', () => {
    expect(judge(new TypeError("Cannot read properties of undefined (reading 'id')"), 'uncaughtException')).toEqual({
      keepServing: false,
      reason: 'thrown out of a callback by code whose state is now unknown',
    });
    expect(
      judge(Object.assign(new Error('bad argument'), { code: 'ERR_INVALID_ARG_TYPE' }), 'uncaughtException')
        .keepServing,
    ).toBe(false);
    expect(judge('thrown string', 'uncaughtException').keepServing).toBe(false);
  });
});
