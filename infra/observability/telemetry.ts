import type { Instrumentation } from '@opentelemetry/instrumentation';
import type { NodeSDK } from '@opentelemetry/sdk-node';
import type { SpanExporter } from '@opentelemetry/sdk-trace-base';

/**
 * One SDK per process, wherever it was started from: the preload (infra/observability/instrument.ts,
 * its own bundle in the image) and the platform's start share this slot on globalThis, so the
 * second one to ask finds the first's SDK instead of starting another.
 */
const SLOT = Symbol.for('platform.telemetry');
const held = ((globalThis as Record<symbol, { sdk: NodeSDK | null }>)[SLOT] ??= { sdk: null });

/** whether an SDK records spans in this process (the API alone is a no-op) */
export const tracingOn = (): boolean => held.sdk !== null;

/** probes and scrapes: a span each would drown the traces that matter */
const UNTRACED_PATHS = new Set(['/live', '/ready', '/metrics']);

/**
 * The maintained instrumentations of what the platform talks over: HTTP in and out (the server
 * span of every request; the route names it, set by the HTTP host), gRPC (billing's CheckLimit),
 * PostgreSQL, Redis and Kafka. Database and cache spans are kept only inside a traced operation:
 * the background loops' polls would otherwise each start a trace of their own.
 */
const instrumentations = async (): Promise<Instrumentation[]> => {
  const [http, grpc, pg, ioredis, kafkajs] = await Promise.all([
    import('@opentelemetry/instrumentation-http'),
    import('@opentelemetry/instrumentation-grpc'),
    import('@opentelemetry/instrumentation-pg'),
    import('@opentelemetry/instrumentation-ioredis'),
    import('@opentelemetry/instrumentation-kafkajs'),
  ]);
  return [
    new http.HttpInstrumentation({
      ignoreIncomingRequestHook: (request) => UNTRACED_PATHS.has((request.url ?? '').split('?')[0]!),
    }),
    new grpc.GrpcInstrumentation(),
    new pg.PgInstrumentation({ requireParentSpan: true }),
    new ioredis.IORedisInstrumentation({ requireParentSpan: true }),
    new kafkajs.KafkaJsInstrumentation(),
  ];
};

/**
 * Starts the OpenTelemetry SDK when an OTLP endpoint is configured (or an exporter is given, in
 * tests). The OTLP exporter reads OTEL_EXPORTER_OTLP_ENDPOINT and friends from the environment.
 * Instrumentations patch a library when it is loaded, so the SDK must start before the platform's
 * modules are: `platform` does so first thing (bin/platform.js, the image's `--import`).
 */
export const startTelemetry = async (options: {
  serviceName: string;
  endpoint?: string;
  exporter?: SpanExporter;
}): Promise<boolean> => {
  if (held.sdk || (!options.endpoint && !options.exporter)) return false;
  let traceExporter = options.exporter;
  if (!traceExporter) {
    const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-http');
    traceExporter = new OTLPTraceExporter();
  }
  // loaded only when telemetry is on: the SDK costs a few hundred ms of every process's start
  const { NodeSDK: Sdk } = await import('@opentelemetry/sdk-node');
  const sdk = new Sdk({ serviceName: options.serviceName, traceExporter, instrumentations: await instrumentations() });
  sdk.start();
  held.sdk = sdk;
  return true;
};

export const stopTelemetry = async (): Promise<void> => {
  const sdk = held.sdk;
  held.sdk = null;
  await sdk?.shutdown();
};
