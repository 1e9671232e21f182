/**
 * A platform process (role all) serving one service with the test authenticator, for the crash
 * test and the benchmarks, so that a load generator does not share its event loop:
 * `SERVICE=money DATABASE_URL=… PORT=0 npx tsx tests/support/service-server.ts`. SERVICE is one of
 * the keys of SERVICES below. Prints one line `READY <url>` when it accepts requests.
 */
import { loadConfig } from '../../infra/config';
import type { ServiceModules } from '../../infra/modules';
import { silentLogger } from '../../infra/observability/logger';
import { startPlatform } from '../../app/platform';
import { testAuthenticator } from './auth';

const SERVICES: Record<string, () => Promise<ServiceModules>> = {
  money: async () => (await import('./money')).moneyModules,
  files: async () => (await import('./files')).filesModules,
  notify: async () => (await import('./notify')).notifyModules,
  /** acceptance alone: the delivery workers left out */
  'notify-http': async () => (await import('./notify')).notifyHttpModules,
  data: async () => (await import('./data')).dataModules,
};

const service = process.env.SERVICE ?? '';
const modulesOf = SERVICES[service];
if (!modulesOf) {
  process.stderr.write(`SERVICE must be one of ${Object.keys(SERVICES).join(', ')} (got "${service}")\n`);
  process.exit(2);
}

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
const running = await startPlatform({ role: 'all', config, logger: silentLogger(), modules: await modulesOf() });
running.kernel.authenticator = testAuthenticator;
const address = running.app.server.address();
const url = typeof address === 'object' && address ? `http://127.0.0.1:${address.port}` : running.url;
process.stdout.write(`READY ${url}\n`);
const stop = () => {
  void running.stop().then(() => process.exit(0));
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
