import type { NodeSDK } from '@opentelemetry/sdk-node';
import type { SpanExporter } from '@opentelemetry/sdk-trace-base';

let sdk: NodeSDK | null = null;

/**
 * Starts the OpenTelemetry SDK when an OTLP endpoint is configured (or an exporter is given, in
 * tests). The OTLP exporter reads OTEL_EXPORTER_OTLP_ENDPOINT and friends from the environment.
 */
export const startTelemetry = async (options: {
  serviceName: string;
  endpoint?: string;
  exporter?: SpanExporter;
}): Promise<boolean> => {
  if (sdk || (!options.endpoint && !options.exporter)) return false;
  let traceExporter = options.exporter;
  if (!traceExporter) {
    const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-http');
    traceExporter = new OTLPTraceExporter();
  }
  // loaded only when telemetry is on: the SDK costs a few hundred ms of every process's start
  const { NodeSDK: Sdk } = await import('@opentelemetry/sdk-node');
  sdk = new Sdk({ serviceName: options.serviceName, traceExporter });
  sdk.start();
  return true;
};

export const stopTelemetry = async (): Promise<void> => {
  await sdk?.shutdown();
  sdk = null;
};
