import { Readable } from 'node:stream';
import { defineRoutes, mergeServiceParts } from '../../../infra/services';

/**
 * Routes that make an error reach the top of the process after they have answered, outside any
 * request, for the process-policy suite (tests/int/http/process-policy.spec.ts): each kind the
 * policy contains, one it treats as fatal, and a slow answer to watch the drain of a fatal stop.
 */
const later = (fn: () => void) => setTimeout(fn, 20);

const faults = defineRoutes({
  namespace: 'process-fixture',
  register(app) {
    const route = { config: { access: 'public' as const } };
    // a stream whose own implementation throws, read by nobody that listens for its 'error'
    app.post('/process-fixture/stream-error', route, async (_request, reply) => {
      later(() =>
        new Readable({
          read() {
            throw new Error('a stream failed outside any request');
          },
        }).resume(),
      );
      return reply.code(202).send({ scheduled: 'stream-error' });
    });
    app.post('/process-fixture/rejection', route, async (_request, reply) => {
      later(() => void Promise.reject(new Error('a promise rejected with nobody awaiting it')));
      return reply.code(202).send({ scheduled: 'rejection' });
    });
    // the failure of one socket write, thrown from a callback
    app.post('/process-fixture/socket-error', route, async (_request, reply) => {
      later(() => {
        throw Object.assign(new Error('write EPIPE'), { code: 'EPIPE', syscall: 'write', errno: -32 });
      });
      return reply.code(202).send({ scheduled: 'socket-error' });
    });
    // a programming error thrown out of a timer: the state of the process is unknown
    app.post('/process-fixture/fatal', route, async (_request, reply) => {
      later(() => {
        throw new TypeError('the bookkeeping of this process is broken');
      });
      return reply.code(202).send({ scheduled: 'fatal' });
    });
    let slow = 0;
    app.post('/process-fixture/slow', route, async (_request, reply) => {
      slow += 1;
      // a deliberately slow route: the request must still be in flight when the process is told to stop
      await new Promise((resolve) => setTimeout(resolve, 1500));
      slow -= 1;
      return reply.code(200).send({ answered: 'slowly' });
    });
    app.post('/process-fixture/slow/in-flight', route, async () => ({ inFlight: slow }));
  },
});

export const processFixture = mergeServiceParts({ write: [faults] });
