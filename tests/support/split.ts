import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../../infra/config';
import type { Kernel } from '../../infra/kernel';
import { silentLogger } from '../../infra/observability/logger';
import { openKernel } from '../../app/platform';
import type { TestClock } from './clock';
import type { TestDatabase } from './db';
import type { TestResolver } from './resolver';
import { createTestDatabase } from './db';
import { requireEnv } from './env';
import type { TestServiceName } from './services';
import { loadTestServices, NEEDS_CLICKHOUSE } from './services';
import { freePort } from './process';
import { pollUntil } from './poll';
import { testProgramArgs } from './test-programs';

export type SplitRole = 'gateway' | 'write-api' | 'read-api' | 'workers';
const ROLES: readonly SplitRole[] = ['write-api', 'read-api', 'workers', 'gateway'];

export interface LogLine {
  level: number;
  msg: string;
  name?: string;
  [field: string]: unknown;
}

export interface SplitOptions {
  services: readonly TestServiceName[];
  /** token: the test authenticator at the gateway (tests/support/auth.ts); identity: real tokens */
  auth: 'token' | 'identity';
  env?: Record<string, string>;
  clock?: TestClock;
  /** the outbound guard's names, shared with every role through a file */
  resolver?: TestResolver;
  database?: TestDatabase;
  /** LOG_LEVEL of the roles (silent by default); their lines are kept for logLines() */
  logLevel?: string;
}

export interface SplitPlatform {
  /** the gateway: what clients and the test talk to */
  url: string;
  /** ROOT_URL of every role (the gateway's URL unless the suite set one) */
  rootUrl: string;
  /**
   * A kernel in the test process on the same database, log, shared cache and clock, with the same
   * modules, and neither HTTP nor workers: what an operator's CLI opens beside the running roles.
   * Tests reach through it for what they check or do behind the API (queries, `platform owner create`).
   */
  kernel: Kernel;
  database: TestDatabase;
  processes: Record<SplitRole, ChildProcess>;
  /** where each role listens (its own /live, /ready, /metrics), as it started */
  roleUrls: Record<SplitRole, string>;
  /** the JSON log lines of every role so far (each carries its role in `name`) */
  logLines: () => LogLine[];
  /** starts one more gateway process in front of the same roles (caches of every gateway process); its URL */
  addGateway: () => Promise<string>;
  /**
   * stops a role (SIGTERM: it drains; SIGKILL: it dies) and starts it again on the same port with
   * the same settings, as an operator's restart; resolves once the new process is started
   */
  restartRole: (role: Exclude<SplitRole, 'gateway'>, signal: 'SIGTERM' | 'SIGKILL') => Promise<void>;
  stop: () => Promise<void>;
}

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
// a role with every service (the documents' suite) takes 90 s and more to start on a loaded 2-core machine
const START_TIMEOUT_MS = 170_000; // below the split project's 180 s hook timeout: a role that never starts fails with its output

export interface RoleProcess {
  child: ChildProcess;
  url: Promise<string>;
  output: () => string;
}

/** how long a role that did not start is given to write its diagnostic report */
const REPORT_WAIT_MS = 5_000;

interface DiagnosticReport {
  javascriptStack?: { message?: string; stack?: string[] };
  libuv?: { type: string; is_active?: boolean; localEndpoint?: unknown; remoteEndpoint?: unknown }[];
}

/** the report once it is written whole (it parses), null until then */
const readReport = (file: string): DiagnosticReport | null => {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as DiagnosticReport;
  } catch {
    return null;
  }
};

/**
 * where a role that did not start stands, from the Node diagnostic report SIGUSR2 makes it write:
 * the JavaScript stack and the open sockets and timers (waits up to REPORT_WAIT_MS for it)
 */
const diagnosticReport = async (file: string): Promise<string> => {
  const report = await pollUntil(
    async () => readReport(file),
    (r) => r !== null,
    { timeoutMs: REPORT_WAIT_MS, everyMs: 100, what: 'the diagnostic report' },
  ).catch(() => null);
  rmSync(file, { force: true });
  if (!report) return `no diagnostic report within ${REPORT_WAIT_MS} ms`;
  const stack = report.javascriptStack?.stack?.slice(0, 20).join('\n    ') ?? '(none)';
  const handles = (report.libuv ?? [])
    .filter((h) => h.is_active && (h.type === 'tcp' || h.type === 'timer' || h.type === 'udp'))
    .map((h) => `${h.type} ${JSON.stringify(h.remoteEndpoint ?? h.localEndpoint ?? '')}`);
  return `JavaScript stack (${report.javascriptStack?.message ?? ''}):\n    ${stack}\nactive handles:\n    ${handles.join('\n    ')}`;
};

const startRole = (role: SplitRole, env: Record<string, string>, lines: LogLine[]): RoleProcess => {
  // SIGUSR2 writes a diagnostic report (JavaScript stack, open sockets and timers) to reportFile
  const reportFile = join(tmpdir(), `platform-role-${role}-${process.pid}-${randomBytes(4).toString('hex')}.json`);
  const child = spawn(
    process.execPath,
    [
      '--report-on-signal',
      '--report-signal=SIGUSR2',
      '--report-compact',
      `--report-directory=${tmpdir()}`,
      `--report-filename=${basename(reportFile)}`,
      ...testProgramArgs('role-server'),
    ],
    {
      // the IPC channel closes when this process dies, however it dies: the role then stops itself
      cwd: ROOT,
      env: { ...process.env, OTEL_SERVICE_NAME: `platform-${role}`, ...env, PLATFORM_TEST_ROLE: role },
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    },
  );
  child.channel?.unref();
  let output = '';
  let pending = '';
  let lastStep = { name: '(none: the process printed nothing)', at: Date.now() };
  const url = new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      const since = (Date.now() - lastStep.at) / 1000;
      const where = `last start step: ${lastStep.name}, begun ${since.toFixed(1)} s before`;
      child.kill('SIGUSR2');
      void diagnosticReport(reportFile).then((report) =>
        reject(new Error(`${role} did not start within ${START_TIMEOUT_MS} ms (${where}):\n${output}\n${report}`)),
      );
    }, START_TIMEOUT_MS);
    child.stdout!.on('data', (chunk: Buffer) => {
      pending += chunk.toString();
      const complete = pending.split('\n');
      pending = complete.pop()!;
      for (const line of complete) {
        const ready = /^READY (\S+)/.exec(line);
        const step = /^STEP (.+)$/.exec(line);
        if (ready) {
          clearTimeout(timer);
          resolve(ready[1]!);
        } else if (step) {
          lastStep = { name: step[1]!, at: Date.now() };
        } else if (line.startsWith('{')) {
          try {
            lines.push(JSON.parse(line) as LogLine);
          } catch {
            output += `${line}\n`;
          }
        } else output += `${line}\n`;
      }
    });
    child.stderr!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      reject(
        new Error(
          `${role} exited (${code ?? signal}) before it was ready (last start step: ${lastStep.name}):\n${output}`,
        ),
      );
    });
  });
  url.catch(() => undefined);
  return { child, url, output: () => output };
};

export const stopRole = async (p: RoleProcess): Promise<void> => {
  if (p.child.exitCode !== null || p.child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => p.child.once('exit', () => resolve()));
  p.child.kill('SIGTERM');
  const timer = setTimeout(() => p.child.kill('SIGKILL'), 15_000);
  await exited;
  clearTimeout(timer);
};

/**
 * the chdb engine served over ClickHouse's HTTP interface (tests/support/clickhouse-server.ts): what
 * roles started apart on a platform with audit views need (`platform serve` refuses them without CLICKHOUSE_URL)
 */
export const startClickHouse = async (
  folder: string,
): Promise<{ url: string; folder: string; process: RoleProcess }> => {
  const child = spawn(process.execPath, [...testProgramArgs('clickhouse-server'), folder], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  child.channel?.unref();
  let output = '';
  const url = new Promise<string>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`the ClickHouse endpoint did not start within ${START_TIMEOUT_MS} ms:\n${output}`)),
      START_TIMEOUT_MS,
    );
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const ready = /READY (\S+)/.exec(output);
      if (ready) {
        clearTimeout(timer);
        resolve(ready[1]!);
      }
    });
    child.stderr!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the ClickHouse endpoint exited (${code}):\n${output}`));
    });
  });
  return { url: await url, folder, process: { child, url, output: () => output } };
};

/**
 * Starts gateway, write-api, read-api and workers as separate processes (tests/support/role-server.ts,
 * i.e. `platform serve <role>`) on a database of their own, the test Kafka and the test Redis (under a
 * key prefix of their own), sharing one PLATFORM_SECRET_KEY and one ROOT_URL. Projections are
 * prepared once, by the control kernel, before the roles start.
 */
export const startSplitPlatform = async (options: SplitOptions): Promise<SplitPlatform> => {
  const database = options.database ?? (await createTestDatabase('split'));
  const ownsDatabase = !options.database;
  const gatewayPort = await freePort();
  const rootUrl = options.env?.ROOT_URL ?? `http://127.0.0.1:${gatewayPort}`;
  const id = randomBytes(6).toString('hex');
  const clockFile = options.clock ? join(tmpdir(), `platform-split-clock-${process.pid}-${id}.json`) : null;
  if (clockFile) options.clock!.shareThrough(clockFile);
  const resolverFile = options.resolver ? join(tmpdir(), `platform-split-dns-${process.pid}-${id}.json`) : null;
  if (resolverFile) options.resolver!.shareThrough(resolverFile);
  // chdb belongs to one process: the roles share it through a ClickHouse HTTP endpoint in a process of its own
  const clickhouse = options.services.some((m) => NEEDS_CLICKHOUSE.has(m))
    ? await startClickHouse(join(tmpdir(), `platform-split-ch-${process.pid}-${id}`))
    : null;
  const env: Record<string, string> = {
    PLATFORM_ENV: 'test',
    LOG_LEVEL: options.logLevel ?? 'silent',
    DATA_DIR: join(tmpdir(), `platform-split-${process.pid}`),
    DATABASE_URL: database.url,
    KAFKA_BROKERS: requireEnv('TEST_KAFKA_BROKERS'),
    REDIS_URL: requireEnv('TEST_REDIS_URL'),
    REDIS_KEY_PREFIX: `platform-test:${id}:`,
    KAFKA_NAMESPACE: `t${id}.`,
    PLATFORM_SECRET_KEY: randomBytes(32).toString('base64'),
    PLATFORM_TEST_SERVICES: options.services.join(','),
    PLATFORM_TEST_AUTH: options.auth,
    ...(clockFile ? { PLATFORM_TEST_CLOCK_FILE: clockFile } : {}),
    ...(resolverFile ? { PLATFORM_TEST_RESOLVER_FILE: resolverFile } : {}),
    ...(clickhouse ? { CLICKHOUSE_URL: clickhouse.url } : {}),
    ...options.env,
    ROOT_URL: rootUrl,
  };
  const config = loadConfig(env);
  const kernel = await openKernel({
    config,
    logger: silentLogger(),
    services: await loadTestServices(options.services),
    clock: options.clock,
    resolver: options.resolver?.resolver,
  });
  const lines: LogLine[] = [];
  const started: Partial<Record<SplitRole, RoleProcess>> = {};
  const roleEnvs: Partial<Record<SplitRole, Record<string, string>>> = {};
  const launch = (role: SplitRole, roleEnv: Record<string, string>) => {
    roleEnvs[role] = roleEnv;
    started[role] = startRole(role, roleEnv, lines);
  };
  const extraGateways: RoleProcess[] = [];
  let gatewayEnv: Record<string, string> = {};
  const stopAll = async () => {
    // the gateways first: no request reaches an upstream that is already gone; then the others
    // together (each drain waits up to a second for its Kafka consumers' fetches in flight)
    const gateways = [...extraGateways, ...(started.gateway ? [started.gateway] : [])];
    await Promise.all(gateways.map(stopRole));
    await Promise.all(
      ROLES.filter((role) => role !== 'gateway' && started[role]).map((role) => stopRole(started[role]!)),
    );
  };
  try {
    await kernel.projections.prepare();
    // a suite that calls billing's gRPC itself names the port (GRPC_PORT), in either topology
    const [writePort, readPort, grpcPort] = [
      await freePort(),
      await freePort(),
      Number(env.GRPC_PORT) || (await freePort()),
    ];
    // billing's gRPC is served by write-api and called by the gateway (when the billing module runs)
    launch('write-api', { ...env, PORT: String(writePort), GRPC_PORT: String(grpcPort) });
    launch('read-api', { ...env, PORT: String(readPort) });
    launch('workers', { ...env, PORT: '0' });
    gatewayEnv = {
      ...env,
      WRITE_API_URL: `http://127.0.0.1:${writePort}`,
      READ_API_URL: `http://127.0.0.1:${readPort}`,
      BILLING_GRPC_TARGET: `127.0.0.1:${grpcPort}`,
    };
    launch('gateway', { ...gatewayEnv, PORT: String(gatewayPort) });
    await Promise.all(ROLES.map((role) => started[role]!.url));
  } catch (error) {
    await stopAll();
    await kernel.close();
    if (clickhouse) await stopRole(clickhouse.process);
    if (ownsDatabase) await database.drop();
    throw error;
  }
  const processes = Object.fromEntries(ROLES.map((role) => [role, started[role]!.child])) as Record<
    SplitRole,
    ChildProcess
  >;
  let stopped: Promise<void> | null = null;
  return {
    url: `http://127.0.0.1:${gatewayPort}`,
    rootUrl,
    kernel,
    database,
    processes,
    roleUrls: Object.fromEntries(
      await Promise.all(ROLES.map(async (role) => [role, await started[role]!.url] as const)),
    ) as Record<SplitRole, string>,
    logLines: () => [...lines],
    addGateway: async () => {
      const port = await freePort();
      const role = startRole('gateway', { ...gatewayEnv, PORT: String(port) }, lines);
      extraGateways.push(role);
      await role.url;
      return `http://127.0.0.1:${port}`;
    },
    restartRole: async (role, signal) => {
      const old = started[role]!.child;
      if (old.exitCode === null && old.signalCode === null) {
        const exited = new Promise((resolve) => old.once('exit', resolve));
        old.kill(signal);
        await exited;
      }
      launch(role, roleEnvs[role]!);
      processes[role] = started[role]!.child;
      await started[role]!.url;
    },
    stop: () => {
      stopped ??= (async () => {
        await stopAll();
        await kernel.close();
        if (clickhouse) {
          await stopRole(clickhouse.process);
          rmSync(clickhouse.folder, { recursive: true, force: true });
        }
        if (clockFile) rmSync(clockFile, { force: true });
        if (resolverFile) rmSync(resolverFile, { force: true });
        if (ownsDatabase) await database.drop();
      })();
      return stopped;
    },
  };
};
