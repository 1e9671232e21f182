/**
 * A platform process serving the money service with the test authenticator, for the crash test
 * and the benchmarks: `DATABASE_URL=… PORT=… npx tsx tests/support/money-server.ts`. Prints one
 * line `READY <url>` when it accepts requests.
 */
import { loadConfig } from '../../infra/config';
import { silentLogger } from '../../infra/observability/logger';
import { startPlatform } from '../../app/platform';
import { testAuthenticator } from './auth';
import { moneyModules } from './money';

// load generators run far above the per-user limit of spec 000; the limiter still runs
const config = loadConfig({
  PLATFORM_ENV: 'test',
  LOG_LEVEL: 'silent',
  PORT: '0',
  RATE_LIMIT_USER_PER_MIN: '10000000',
  RATE_LIMIT_ADMIN_PER_MIN: '10000000',
  RATE_LIMIT_TENANT_PER_MIN: '10000000',
  ...process.env,
});
const running = await startPlatform({ role: 'all', config, logger: silentLogger(), modules: moneyModules });
running.kernel.authenticator = testAuthenticator;
const address = running.app.server.address();
const url = typeof address === 'object' && address ? `http://127.0.0.1:${address.port}` : running.url;
process.stdout.write(`READY ${url}\n`);
const stop = () => {
  void running.stop().then(() => process.exit(0));
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
