import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import { v7 as uuidv7 } from 'uuid';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTelemetry, stopTelemetry } from '../../../infra/observability/telemetry';
import { testToken } from '../../support/auth';
import type { TestPlatform } from '../../support/platform';
import { startTestPlatform } from '../../support/platform';
import { pollUntil } from '../../support/poll';

const exporter = new InMemorySpanExporter();
let platform: TestPlatform;
const headers = {
  authorization: `Bearer ${testToken('tenant-a', 'u1', ['tally.*'])}`,
  'content-type': 'application/json',
};

beforeAll(async () => {
  await startTelemetry({ serviceName: 'test', exporter });
  platform = await startTestPlatform();
});
afterAll(async () => {
  await platform.close();
  await stopTelemetry();
});

describe('a traced platform', () => {
  // the HTTP server spans come from the HTTP instrumentation, which patches http as it loads: a
  // platform in this process loaded it first (traces.spec.ts follows them through the split roles)
  it('records spans for the command, the append, the relay batch and the projection batch', async () => {
    await platform.http('/v1/tally/counters', {
      method: 'POST',
      headers,
      body: JSON.stringify({ id: 'c', name: 'c' }),
    });
    await platform.http('/v1/tally/counters/c/increment', {
      method: 'POST',
      headers: { ...headers, 'idempotency-key': uuidv7() },
      body: JSON.stringify({ by: 1 }),
    });
    const names = () => new Set(exporter.getFinishedSpans().map((s) => s.name));
    await pollUntil(
      async () => names(),
      (seen) => ['relay.batch', 'projection.batch'].every((n) => seen.has(n)),
      { timeoutMs: 10_000, what: 'the relay and projection spans' },
    );
    expect([...names()]).toEqual(
      expect.arrayContaining(['command', 'eventstore.append', 'relay.batch', 'projection.batch']),
    );
  });
});
