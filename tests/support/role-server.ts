/**
 * One role of the split test topology (tests/support/split.ts): what `platform serve <role>` runs
 * (startPlatform with that role, configuration from the environment), plus the things only tests
 * need, chosen by environment variables. It lives under tests/ and is no part of the package's
 * `platform` command: nothing here reaches a production process.
 *
 *   PLATFORM_TEST_ROLE          gateway | write-api | read-api | workers
 *   PLATFORM_TEST_SERVICES       comma-separated names of tests/support/services.ts
 *   PLATFORM_TEST_AUTH          token (the test authenticator, tests/support/auth.ts) or identity (real tokens)
 *   PLATFORM_TEST_CLOCK_FILE    a clock the test moves (tests/support/clock.ts fileClock); real time without it
 *   PLATFORM_TEST_RESOLVER_FILE the names the outbound guard resolves (tests/support/resolver.ts fileResolver)
 *
 * Prints one line `READY <url>` once it accepts requests, and before that `STEP <name>` as each step
 * of its start begins (the harness names the last one of a start that never ends); logs are pino
 * JSON lines on stdout.
 * SIGTERM, or the end of the IPC channel of the process that started it, drains and stops it.
 */
import { loadConfig } from '../../infra/config';
import { createLogger } from '../../infra/observability/logger';
import { installProcessPolicy } from '../../infra/runtime/process-policy';
import type { Role } from '../../app/platform';
import { startPlatform } from '../../app/platform';
import { testAuthenticator } from './auth';
import { fileClock } from './clock';
import { fileResolver } from './resolver';
import { isTestServiceName, loadTestServices } from './services';

const ROLES: readonly Role[] = ['gateway', 'write-api', 'read-api', 'workers'];

const fail = (message: string): never => {
  process.stderr.write(`role-server: ${message}\n`);
  process.exit(2);
};

const step = (name: string) => process.stdout.write(`STEP ${name}\n`);
step('code loaded');
const config = loadConfig();
const role = process.env.PLATFORM_TEST_ROLE as Role;
if (!ROLES.includes(role)) fail(`PLATFORM_TEST_ROLE must be one of ${ROLES.join(', ')}`);
const names = (process.env.PLATFORM_TEST_SERVICES ?? '').split(',').filter(Boolean);
const unknown = names.filter((n) => !isTestServiceName(n));
if (unknown.length) fail(`unknown test services: ${unknown.join(', ')}`);
const auth = process.env.PLATFORM_TEST_AUTH ?? 'token';
if (auth !== 'token' && auth !== 'identity') fail('PLATFORM_TEST_AUTH must be token or identity');

const clockFile = process.env.PLATFORM_TEST_CLOCK_FILE;
const resolverFile = process.env.PLATFORM_TEST_RESOLVER_FILE;
const logger = createLogger({ level: config.LOG_LEVEL, name: role });
let stop: ((code: number) => void) | null = null;
/** drains and exits once started; before that there is nothing to drain */
const end = (code: number) => (stop ? stop(code) : process.exit(code));
// the process policy of `platform serve` (app/cli/main.ts): contained errors logged, a fatal one drains and exits 1
installProcessPolicy({ logger, context: { role }, onFatal: () => end(1) });
process.on('SIGTERM', () => end(0));
process.on('SIGINT', () => end(0));
// started with an IPC channel by the test harness: a test process that dies does not leave its roles
// behind, even one that dies while they are still starting
process.on('disconnect', () => end(0));
if (process.send && !process.connected) end(0); // it died while this process loaded its code
step('services');
const services = await loadTestServices(names.filter(isTestServiceName));
const running = await startPlatform({
  role,
  config,
  logger,
  services,
  clock: clockFile ? fileClock(clockFile) : undefined,
  resolver: resolverFile ? fileResolver(resolverFile) : undefined,
  onStep: step,
});
if (auth === 'token') running.kernel.authenticator = testAuthenticator;
const address = running.app.server.address();
process.stdout.write(
  `READY ${typeof address === 'object' && address ? `http://127.0.0.1:${address.port}` : running.url}\n`,
);

let stopping = false;
stop = (code: number) => {
  if (stopping) return;
  stopping = true;
  running.stop().then(
    () => process.exit(code),
    (error: unknown) => {
      process.stderr.write(`role-server: stop failed: ${String(error)}\n`);
      process.exit(1);
    },
  );
};
