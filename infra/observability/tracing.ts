import {
  context,
  isSpanContextValid,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  TraceFlags,
  type Attributes,
  type Span,
} from '@opentelemetry/api';
import { tracingOn } from './telemetry';

/**
 * Spans for HTTP requests, commands, appends, relay batches and projection batches. The API is a
 * no-op until startTelemetry registers an SDK (only when OTEL_EXPORTER_OTLP_ENDPOINT is set, or an
 * in-memory exporter in tests), so instrumented code costs next to nothing when tracing is off.
 */
const tracer = () => trace.getTracer('platform');

export const withSpan = async <T>(
  name: string,
  attributes: Attributes,
  fn: () => Promise<T>,
  kind: SpanKind = SpanKind.INTERNAL,
): Promise<T> =>
  tracer().startActiveSpan(name, { attributes, kind }, async (span) => {
    try {
      return await fn();
    } catch (error) {
      span.recordException(error as Error);
      span.setStatus({ code: SpanStatusCode.ERROR });
      throw error;
    } finally {
      span.end();
    }
  });

/**
 * The span an event's envelope names as its cause: the active span, when it belongs to the
 * event's trace and is sampled (an unsampled one is exported nowhere, so nothing could continue it).
 */
export const causingSpanId = (traceId: string | null): string | null => {
  const span = trace.getActiveSpan()?.spanContext();
  return span && span.traceId === traceId && span.traceFlags & TraceFlags.SAMPLED && isSpanContextValid(span)
    ? span.spanId
    : null;
};

/** what of an event continues its trace: its trace and the span that appended it */
export interface TracedItem {
  traceId?: string | null;
  spanId?: string | null;
}

/** the context of the span that appended an item: its readers' spans are its children */
const causeOf = (item: { traceId: string; spanId: string }) =>
  trace.setSpanContext(ROOT_CONTEXT, {
    traceId: item.traceId,
    spanId: item.spanId,
    traceFlags: TraceFlags.SAMPLED,
    isRemote: true,
  });

/**
 * Runs fn for one item read from the log (a delivery of an event) in a span that is a child of the
 * span that appended it; fn's own calls (an outgoing webhook's traceparent) continue that trace.
 */
export const continueTrace = async <T>(
  name: string,
  item: TracedItem,
  attributes: Attributes,
  fn: () => Promise<T>,
): Promise<T> => {
  const { traceId, spanId } = item;
  if (!tracingOn() || !traceId || !spanId) return fn();
  return context.with(causeOf({ traceId, spanId }), () => withSpan(name, attributes, fn, SpanKind.CONSUMER));
};

/**
 * Runs fn over a batch read from the log (a relay's publish, a projection's apply) with one span per
 * traced event, a child of the span that appended it: so a request's trace goes on past the log, in
 * whatever process reads it, as far as the read models. Each span lasts as long as the batch (the
 * events are handled together) and is linked to the batch's own span. Untraced events, and every
 * event while tracing is off, cost nothing.
 */
export const continueTraces = async <T, I>(
  names: { batch: string; each: string },
  items: readonly I[],
  traceOf: (item: I) => TracedItem,
  attributes: Attributes,
  fn: () => Promise<T>,
): Promise<T> => {
  if (!tracingOn()) return fn();
  return withSpan(names.batch, attributes, async () => {
    const batch = trace.getActiveSpan()?.spanContext();
    const spans: Span[] = [];
    for (const item of items) {
      const { traceId, spanId } = traceOf(item);
      if (!traceId || !spanId) continue;
      spans.push(
        tracer().startSpan(
          names.each,
          { kind: SpanKind.CONSUMER, attributes, links: batch ? [{ context: batch }] : [] },
          causeOf({ traceId, spanId }),
        ),
      );
    }
    try {
      return await fn();
    } catch (error) {
      for (const span of spans) span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).message });
      throw error;
    } finally {
      for (const span of spans) span.end();
    }
  });
};
