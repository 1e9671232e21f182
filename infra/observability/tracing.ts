import { SpanStatusCode, trace, type Attributes } from '@opentelemetry/api';

/**
 * Spans for HTTP requests, commands, appends, relay batches and projection batches. The API is a
 * no-op until startTelemetry registers an SDK (only when OTEL_EXPORTER_OTLP_ENDPOINT is set, or an
 * in-memory exporter in tests), so instrumented code costs next to nothing when tracing is off.
 */
const tracer = () => trace.getTracer('platform');

export const withSpan = async <T>(name: string, attributes: Attributes, fn: () => Promise<T>): Promise<T> =>
  tracer().startActiveSpan(name, { attributes }, async (span) => {
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
