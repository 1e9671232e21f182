/**
 * A platform process (role all) serving the test services named in SERVICE (comma-separated names of
 * tests/support/services.ts) with the test authenticator, for the crash test and the benchmarks, so
 * that a load generator does not share its event loop:
 * `SERVICE=money DATABASE_URL=… PORT=0 npx tsx tests/support/service-server.ts`. SERVICE_WORKERS=off
 * leaves the workers out (acceptance alone). Prints one line `READY <url>` when it accepts requests.
 */
import { loadConfig } from '../../infra/config';
import { silentLogger } from '../../infra/observability/logger';
import { startPlatform } from '../../app/platform';
import { testAuthenticator } from './auth';
import { isTestServiceName, loadTestServices, TEST_SERVICES } from './services';

const names = (process.env.SERVICE ?? '').split(',').filter(Boolean);
if (!names.length || !names.every(isTestServiceName)) {
  process.stderr.write(
    `SERVICE must name services of ${Object.keys(TEST_SERVICES).join(', ')} (got "${process.env.SERVICE}")\n`,
  );
  process.exit(2);
}
const loaded = await loadTestServices(names);
const services = process.env.SERVICE_WORKERS === 'off' ? { ...loaded, workers: [] } : loaded;

// load generators run far above the per-user limit of spec 000; the limiter still runs
const config = loadConfig({
  PLATFORM_ENV: 'test',
  LOG_LEVEL: 'silent',
  PORT: '0',
  RATE_LIMIT_USER_PER_MIN: '10000000',
  RATE_LIMIT_ADMIN_PER_MIN: '10000000',
  RATE_LIMIT_MODULE_PER_MIN: '10000000',
  RATE_LIMIT_TENANT_PER_MIN: '10000000',
  ...process.env,
});
const running = await startPlatform({ role: 'all', config, logger: silentLogger(), services });
running.kernel.authenticator = testAuthenticator;
const address = running.app.server.address();
const url = typeof address === 'object' && address ? `http://127.0.0.1:${address.port}` : running.url;
process.stdout.write(`READY ${url}\n`);
const stop = () => {
  void running.stop().then(() => process.exit(0));
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
