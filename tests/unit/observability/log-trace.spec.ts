import { Writable } from 'node:stream';
import { trace } from '@opentelemetry/api';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../../infra/observability/logger';
import { startTelemetry, stopTelemetry } from '../../../infra/observability/telemetry';
import { withSpan } from '../../../infra/observability/tracing';

const exporter = new InMemorySpanExporter();
const lines: Record<string, unknown>[] = [];
const logger = createLogger({
  level: 'info',
  destination: new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      done();
    },
  }),
});

beforeAll(() => startTelemetry({ serviceName: 'test', exporter }));
afterAll(() => stopTelemetry());

describe('a log line written inside a traced operation', () => {
  it('names the trace and the span being recorded', async () => {
    // when a line is written inside a span
    const span = await withSpan('work', {}, async () => {
      logger.info('inside');
      return trace.getActiveSpan()!.spanContext();
    });

    // then it carries that span's trace and span ids
    expect(lines.find((l) => l.msg === 'inside')).toMatchObject({ traceId: span.traceId, spanId: span.spanId });
    expect(span.traceFlags).toBe(1); // sampled: the SDK records it
  });

  it('keeps a request logger’s own traceId and adds only the span', async () => {
    // given a logger bound to a request's traceId (the HTTP host binds it: the server span's)
    const request = logger.child({ traceId: 'bound' });

    // when it writes inside a span
    await withSpan('handler', {}, async () => request.info('request line'));

    // then the line has one traceId, the bound one, beside the span
    const raw = lines.find((l) => l.msg === 'request line');
    expect(raw?.traceId).toBe('bound');
    expect(raw?.spanId).toMatch(/^[\da-f]{16}$/);
  });

  it('adds nothing outside a span', () => {
    logger.info('outside');
    const line = lines.find((l) => l.msg === 'outside');
    expect(line).not.toHaveProperty('traceId');
    expect(line).not.toHaveProperty('spanId');
  });
});
