/**
 * The first thing a platform process runs, before any of the platform's modules or the libraries
 * they use are loaded: instrumentations patch a library as it loads, so an SDK started later sees
 * neither PostgreSQL nor HTTP. `bin/platform.js` imports it before the CLI; the image runs
 * `node --import ./dist/instrument.mjs dist/platform.mjs`. It starts tracing only when
 * OTEL_EXPORTER_OTLP_ENDPOINT is set, and then names the service after the command line's role
 * (OTEL_SERVICE_NAME wins): platform-all for `start`, platform-<role> for `serve <role>`.
 */
import { startTelemetry } from './telemetry';

const serviceOf = (argv: string[]): string => {
  const command = argv.findIndex((a) => a === 'start' || a === 'serve');
  if (command < 0) return 'platform';
  return argv[command] === 'start' ? 'platform-all' : `platform-${argv[command + 1] ?? 'unknown'}`;
};

/**
 * The platform is ESM, and an `import` of a package never passes through `require`, where the
 * instrumentations hook: without import-in-the-middle's loader, gRPC, Redis and Kafka stayed
 * unpatched (PostgreSQL was patched only because pg requires its own files). The loader runs on
 * Node's hooks thread and intercepts only the modules the instrumentations name; it must be
 * registered before they are made, and they must be acknowledged before the platform is imported.
 */
const interceptPackageImports = async (): Promise<() => Promise<void>> => {
  const [{ register }, { createAddHookMessageChannel }] = await Promise.all([
    import('node:module'),
    import('import-in-the-middle'),
  ]);
  const { registerOptions, waitForAllMessagesAcknowledged } = createAddHookMessageChannel();
  register('import-in-the-middle/hook.mjs', import.meta.url, registerOptions);
  return waitForAllMessagesAcknowledged;
};

const endpoint = process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
if (endpoint) {
  const acknowledged = await interceptPackageImports();
  await startTelemetry({ serviceName: process.env.OTEL_SERVICE_NAME || serviceOf(process.argv.slice(2)), endpoint });
  await acknowledged();
}
