import { randomBytes } from 'node:crypto';
import { v7 as uuidv7 } from 'uuid';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testToken } from '../../support/auth';
import { apiClient, EVENTS_TEST_ENV, eventually, startReceiver, subscribedModule } from '../../support/events';
import { pollUntil } from '../../support/poll';
import { callerContext, orphansOf, startOtlpSink, type OtlpSink } from '../../support/otlp-sink';
import { startSplitPlatform, type SplitPlatform } from '../../support/split';

/**
 * Traces as an operator sees them: the split roles, each its own process with the tracing preload,
 * export over OTLP/HTTP to a real receiver — tools/go/otlp-sink, on the OpenTelemetry Collector's
 * own codec (pdata), built by scripts/test-infra.sh — and one request is followed from the
 * gateway through write-api, the log and the workers' relay to the projector, as one trace.
 */
let sink: OtlpSink;
let platform: SplitPlatform;
const headers = {
  authorization: `Bearer ${testToken('tenant-a', 'u1', ['tally.*'])}`,
  'content-type': 'application/json',
};

beforeAll(async () => {
  sink = await startOtlpSink();
  platform = await startSplitPlatform({
    services: ['tally', 'events'],
    auth: 'token',
    env: { ...EVENTS_TEST_ENV, OTEL_EXPORTER_OTLP_ENDPOINT: sink.endpoint, OTEL_BSP_SCHEDULE_DELAY: '100' },
  });
});
afterAll(async () => {
  await platform?.stop();
  sink?.stop();
});

describe('a request through the split roles', () => {
  it('is one trace from the gateway to the projector, continuing the caller’s context', async () => {
    // given a counter, and a caller with a trace of its own
    const counter = `c-${randomBytes(4).toString('hex')}`;
    const created = await fetch(`${platform.url}/v1/tally/counters`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ id: counter, name: 'traced' }),
    });
    expect(created.status).toBe(201);
    const caller = callerContext();

    // when it increments the counter through the gateway (an event the async projection handles)
    const res = await fetch(`${platform.url}/v1/tally/counters/${counter}/increment`, {
      method: 'POST',
      headers: { ...headers, traceparent: caller.traceparent, 'idempotency-key': uuidv7() },
      body: JSON.stringify({ by: 1 }),
    });
    expect(res.status).toBe(200);

    // then every role exports its part of that one trace, down to the projection's apply
    const spans = await pollUntil(
      async () => sink.spansOf(caller.traceId),
      (found) => found.some((s) => s.name === 'projection.apply') && found.some((s) => s.name === 'relay.publish'),
      { timeoutMs: 30_000, what: 'the relay and projection spans of the request’s trace' },
    );
    const services = new Set(spans.map((s) => s.service));
    expect([...services].sort()).toEqual(['platform-gateway', 'platform-workers', 'platform-write-api']);
    const named = (name: string, service: string) => spans.filter((s) => s.name === name && s.service === service);
    const route = 'POST /v1/tally/counters/:id/increment';
    expect(named(route, 'platform-gateway')).toHaveLength(1);
    expect(named(route, 'platform-write-api')).toHaveLength(1);
    expect(named('command', 'platform-write-api')).toHaveLength(1);
    expect(
      spans.some((s) => s.service === 'platform-write-api' && s.attributes['db.system.name'] === 'postgresql'),
    ).toBe(true);

    // and the spans form one tree under the caller's span: no parent is made up
    expect(orphansOf(spans, caller.spanId)).toEqual([]);
    const root = spans.filter((s) => s.parentSpanId === caller.spanId);
    expect(root.map((s) => `${s.service} ${s.kind}`)).toEqual(['platform-gateway Server']);
  });

  it('goes on into the webhook delivery of an event it published, and to the module’s handler', async () => {
    // given a module subscribed to its own topic with a webhook, and a caller with a trace of its own
    const receiver = await startReceiver();
    try {
      const { module, topic, type } = await subscribedModule(platform, {
        prefix: 'trc',
        event: 'thing.done',
        handler: 'traced',
        receiver,
        tenantId: 'tenant-a',
      });
      const caller = callerContext();
      const publisher = apiClient(platform.url, module.key, {
        'x-module-tenant': 'tenant-a',
        traceparent: caller.traceparent,
      });

      // when the module publishes an event under that trace
      expect((await publisher.call('POST', '/events/publish', { topic, type, payload: { n: 1 } })).status).toBe(202);

      // then the bus relay's publish and the delivery are spans of the trace, and the webhook carries its context
      const delivered = await eventually(async () => receiver.received.find((b) => b.event?.type === type));
      let spans = await pollUntil(
        async () => sink.spansOf(caller.traceId),
        (found) => ['relay.publish', 'bus.deliver'].every((name) => found.some((s) => s.name === name)),
        { timeoutMs: 30_000, what: 'the relay’s and the delivery’s spans' },
      );
      const deliver = spans.find((s) => s.name === 'bus.deliver')!;
      expect(deliver.service).toBe('platform-workers');
      // the webhook's parent: the POST's own client span (the HTTP instrumentation's), a child of the delivery
      const [, traceId, parentId] = (delivered.traceparent as string).split('-');
      expect(traceId).toBe(caller.traceId);
      const post = await pollUntil(
        async () => sink.spansOf(caller.traceId).find((s) => s.spanId === parentId),
        (found) => found !== undefined,
        { timeoutMs: 15_000, what: 'the webhook POST’s span' },
      );
      expect(post).toMatchObject({ kind: 'Client', parentSpanId: deliver.spanId });
      spans = sink.spansOf(caller.traceId);
      expect(orphansOf(spans, caller.spanId)).toEqual([]);
    } finally {
      await receiver.close();
    }
  });

  it('names the exported trace in the problem it answers', async () => {
    // given a caller with a trace of its own
    const caller = callerContext();

    // when its request is refused (the body does not validate)
    const res = await fetch(`${platform.url}/v1/tally/counters`, {
      method: 'POST',
      headers: { ...headers, traceparent: caller.traceparent },
      body: JSON.stringify({ id: 42 }),
    });

    // then the problem's traceId is the trace the roles exported for it
    expect(res.status).toBe(400);
    expect(((await res.json()) as { traceId: string }).traceId).toBe(caller.traceId);
    const spans = await pollUntil(
      async () => sink.spansOf(caller.traceId),
      (found) => found.some((s) => s.kind === 'Server'),
      { timeoutMs: 15_000, what: 'the server span of the refused request' },
    );
    expect(spans.find((s) => s.kind === 'Server')?.attributes['http.response.status_code']).toBe(400);
  });
});
