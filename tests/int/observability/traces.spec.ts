import { randomBytes } from 'node:crypto';
import { v7 as uuidv7 } from 'uuid';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testToken } from '../../support/auth';
import { apiClient, EVENTS_TEST_ENV, eventually, startReceiver, subscribedModule } from '../../support/events';
import { seedMember } from '../../support/notify';
import { pollUntil } from '../../support/poll';
import { startSmtpCapture, type SmtpCapture } from '../../support/smtp-capture';
import {
  callerContext,
  named,
  startOtlpSink,
  wholeTrace,
  type ExportedSpan,
  type OtlpSink,
} from '../../support/otlp-sink';
import { startSplitPlatform, type SplitPlatform } from '../../support/split';

/**
 * Traces as an operator sees them: the split roles, each its own process with the tracing preload,
 * export over OTLP/HTTP to a real receiver — tools/go/otlp-sink, on the OpenTelemetry Collector's
 * own codec (pdata), built by scripts/test-infra.sh — and one request is followed from the
 * gateway through write-api, the log and the workers' relay to the projector, as one trace.
 */
let sink: OtlpSink;
let smtp: SmtpCapture;
let platform: SplitPlatform;
const headers = {
  authorization: `Bearer ${testToken('tenant-a', 'u1', ['tally.*', 'notify.*'])}`,
  'content-type': 'application/json',
};

beforeAll(async () => {
  sink = await startOtlpSink();
  smtp = await startSmtpCapture();
  platform = await startSplitPlatform({
    services: ['tally', 'events', 'notify', 'billing'],
    auth: 'token',
    env: {
      ...EVENTS_TEST_ENV,
      SMTP_URL: smtp.url,
      OTEL_EXPORTER_OTLP_ENDPOINT: sink.endpoint,
      OTEL_BSP_SCHEDULE_DELAY: '100',
    },
  });
});
afterAll(async () => {
  await platform?.stop();
  await smtp?.close();
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
    // (and the spans form one tree under the caller's span: no parent is made up)
    const spans = await wholeTrace(
      sink,
      caller,
      named('relay.publish', 'projection.apply'),
      'the relay and projection spans of the request’s trace',
    );
    const services = new Set(spans.map((s) => s.service));
    expect([...services].sort()).toEqual(['platform-gateway', 'platform-workers', 'platform-write-api']);
    const of = (name: string, service: string) => spans.filter((s) => s.name === name && s.service === service);
    const route = 'POST /v1/tally/counters/:id/increment';
    expect(of(route, 'platform-gateway')).toHaveLength(1);
    expect(of(route, 'platform-write-api')).toHaveLength(1);
    expect(of('command', 'platform-write-api')).toHaveLength(1);
    expect(
      spans.some((s) => s.service === 'platform-write-api' && s.attributes['db.system.name'] === 'postgresql'),
    ).toBe(true);

    // whose one root is the gateway's server span
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
      // the webhook's parent: the POST's own client span (the HTTP instrumentation's), a child of the delivery
      const [, traceId, parentId] = (delivered.traceparent as string).split('-');
      expect(traceId).toBe(caller.traceId);
      const spans = await wholeTrace(
        sink,
        caller,
        (found) => named('relay.publish', 'bus.deliver')(found) && found.some((s) => s.spanId === parentId),
        'the relay’s, the delivery’s and the webhook POST’s spans',
      );
      const deliver = spans.find((s) => s.name === 'bus.deliver')!;
      expect(deliver.service).toBe('platform-workers');
      expect(spans.find((s) => s.spanId === parentId)).toMatchObject({ kind: 'Client', parentSpanId: deliver.spanId });
    } finally {
      await receiver.close();
    }
  });

  it('goes on into the delivery of a notification it sent', async () => {
    // given a member to mail, and a caller with a trace of its own
    const member = `ada-${randomBytes(4).toString('hex')}`;
    await seedMember(platform.kernel.db, 'tenant-a', member);
    const caller = callerContext();

    // when it sends the member an email through the gateway
    const res = await fetch(`${platform.url}/v1/notify`, {
      method: 'POST',
      headers: { ...headers, traceparent: caller.traceparent, 'idempotency-key': uuidv7() },
      body: JSON.stringify({ channel: 'email', recipient: { userId: member }, subject: 'Traced', body: 'hello' }),
    });
    expect(res.status).toBe(202);
    const { notificationId } = (await res.json()) as { notificationId: string };

    // then the workers' attempt that mailed it is a span of the request's trace, under write-api's append
    await eventually(async () =>
      smtp.messages.find((m) => m.parsed.headers.get('x-notification-id') === notificationId),
    );
    const spans = await wholeTrace(sink, caller, named('notify.deliver'), 'the delivery’s span');
    const deliver = spans.find((s) => s.name === 'notify.deliver')!;
    expect(deliver).toMatchObject({ service: 'platform-workers', attributes: { 'notify.channel': 'email' } });
    expect(spans.find((s) => s.spanId === deliver.parentSpanId)?.service).toBe('platform-write-api');
  });

  it('crosses the gateway’s gRPC call to billing', async () => {
    // given a tenant the gateway has no billing answer cached for, and a caller with a trace of its own
    const tenant = `tenant-${randomBytes(4).toString('hex')}`;
    const caller = callerContext();

    // when its first mutation comes through the gateway (which asks billing, in write-api, over gRPC)
    const res = await fetch(`${platform.url}/v1/tally/counters`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${testToken(tenant, 'u1', ['tally.*'])}`,
        'content-type': 'application/json',
        traceparent: caller.traceparent,
      },
      body: JSON.stringify({ id: 'first', name: 'billed' }),
    });
    expect(res.status).toBe(201);

    // then write-api's gRPC server span is a child of the gateway's gRPC client span, in the caller's trace
    const grpcSpans = (found: ExportedSpan[]) => found.filter((s) => s.attributes['rpc.system'] === 'grpc');
    const spans = await wholeTrace(
      sink,
      caller,
      (found) => grpcSpans(found).some((s) => s.kind === 'Server'),
      'the billing call’s server span',
    );
    const server = grpcSpans(spans).find((s) => s.kind === 'Server')!;
    expect(server.service).toBe('platform-write-api');
    expect(server.name).toMatch(/^grpc\.platform\.billing\.v1\.BillingService\//);
    expect(spans.find((s) => s.spanId === server.parentSpanId)).toMatchObject({
      service: 'platform-gateway',
      kind: 'Client',
      name: server.name,
    });
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
