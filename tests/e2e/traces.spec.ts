import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callerContext, named, startOtlpSink, wholeTrace, type OtlpSink } from '../support/otlp-sink';
import { embeddedEnv, freePort, runCli, runPlatform, waitFor, type PlatformProcess } from '../support/process';

/**
 * Traces from `platform start` (every role in one process, embedded engines), as from the split
 * roles (tests/int/observability/traces.spec.ts): the process is started as `npm start` starts it,
 * through bin/platform.js and its tracing preload, exporting to a real OTLP receiver.
 */
const dataDir = mkdtempSync(join(tmpdir(), 'platform-traces-'));
const embedded = embeddedEnv(dataDir, 'debug'); // a request's own line is at debug
let sink: OtlpSink;
let platform: PlatformProcess;

beforeAll(async () => {
  sink = await startOtlpSink();
  platform = runPlatform(
    ['start'],
    { ...embedded, OTEL_EXPORTER_OTLP_ENDPOINT: sink.endpoint, OTEL_BSP_SCHEDULE_DELAY: '100' },
    await freePort(),
  );
  await waitFor(`${platform.url}/ready`, 200, 120_000).catch((e: Error) => {
    throw new Error(`${e.message}\n${platform.output().slice(-3000)}`);
  });
}, 150_000);
afterAll(async () => {
  platform?.child.kill('SIGTERM');
  await platform?.exited;
  sink?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('`platform start` with an OTLP endpoint', () => {
  it('exports a login as one trace, from its route through the relay to the projections, and logs its trace id', async () => {
    // given a platform owner
    const email = 'owner@traces.example';
    const password = 'vX9#qL2!mR7p-owner-traces';
    const created = await runCli(['owner', 'create', '--email', email, '--password', password], {
      ...embedded,
      GRPC_PORT: '0',
    });
    expect(created.code, created.stderr).toBe(0);
    const caller = callerContext();

    // when the owner logs in under a trace of the caller's
    const login = await fetch(`${platform.url}/v1/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', traceparent: caller.traceparent },
      body: JSON.stringify({ email, password }),
    });
    expect(login.status).toBe(200);

    // then the one process exports the request, the relay's publish and a projection's apply of
    // the events it appended, as one tree under the caller's span
    const spans = await wholeTrace(
      sink,
      caller,
      named('relay.publish', 'projection.apply'),
      'the relay and projection spans of the login’s trace',
    );
    expect(new Set(spans.map((s) => s.service))).toEqual(new Set(['platform-all']));
    expect(spans.filter((s) => s.kind === 'Server').map((s) => s.name)).toEqual(['POST /v1/auth/login']);
    // and the lines it logged for the request name that trace
    expect(platform.output()).toMatch(new RegExp(`"traceId":"${caller.traceId}".*"msg":"request"`));
  }, 120_000);
});
