import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/**
 * The environment of `npm start` on its embedded engines in dataDir: the test runner's environment
 * may name real engines, and `npm start` must not need them.
 */
export const embeddedEnv = (dataDir: string, logLevel = 'warn'): Record<string, string> => ({
  DATA_DIR: dataDir,
  HOST: '127.0.0.1',
  // one process: the HTTP workers have their own test (tests/e2e/cluster.spec.ts), and each worker costs a start
  HTTP_WORKERS: '1',
  LOG_LEVEL: logLevel,
  DATABASE_URL: '',
  KAFKA_BROKERS: '',
  REDIS_URL: '',
  CLICKHOUSE_URL: '',
  S3_ENDPOINT: '',
  SMTP_URL: '',
  CLAMD_HOST: '',
});

export const freePort = (): Promise<number> =>
  new Promise((ok, fail) => {
    const server = createServer();
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? ok(address.port) : fail(new Error('no port'))));
    });
  });

export interface PlatformProcess {
  child: ChildProcess;
  url: string;
  output: () => string;
  exited: Promise<number | null>;
}

/**
 * `platform <args>` as a child process, the way an operator runs it; billing's gRPC on a free port
 * unless the test names one (50051 would be shared by every test process on the machine)
 */
export const runPlatform = (args: string[], env: Record<string, string>, port: number): PlatformProcess => {
  let output = '';
  const child = spawn(process.execPath, ['bin/platform.js', ...args], {
    cwd: ROOT,
    env: { ...process.env, GRPC_PORT: '0', HTTP_WORKERS: '1', ...env, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout.on('data', (d: Buffer) => {
    output += d.toString();
  });
  child.stderr.on('data', (d: Buffer) => {
    output += d.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, url: `http://127.0.0.1:${port}`, output: () => output, exited };
};

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * `platform <args>` to completion with exactly the given environment (nothing inherited but PATH
 * and HOME), as an operator's shell or a container would run it.
 */
export const runCli = (args: string[], env: Record<string, string>, timeoutMs = 120_000): Promise<CliRun> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['bin/platform.js', ...args], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`platform ${args.join(' ')} did not finish within ${timeoutMs} ms\n${stdout}\n${stderr}`));
    }, timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });

/** polls GET url until it answers with the status, or fails after the deadline */
export const waitFor = async (url: string, status: number, timeoutMs: number): Promise<Response> => {
  const deadline = Date.now() + timeoutMs;
  let last = 'no answer';
  while (Date.now() < deadline) {
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
      if (res.status === status) return res;
      last = `${res.status} ${await res.text()}`;
    } catch (error) {
      last = String(error);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`${url} did not answer ${status} within ${timeoutMs} ms; last: ${last}`);
};
