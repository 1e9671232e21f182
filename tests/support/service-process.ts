import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import { testProgramArgs } from './test-programs';

export interface ServiceProcess {
  child: ChildProcess;
  url: string;
}

/**
 * One service of the platform (tests/support/service-server.ts, SERVICE=<name>) as a child process
 * that a test may SIGKILL; resolves with its URL once it printed READY, rejects with its stderr if
 * it exits first or does not start within startMs.
 */
export const startServiceProcess = (
  service: string,
  env: Record<string, string>,
  startMs = 60_000,
): Promise<ServiceProcess> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, testProgramArgs('service-server'), {
      env: { ...process.env, SERVICE: service, PORT: '0', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    const timer = setTimeout(() => reject(new Error(`server did not start: ${err}`)), startMs);
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const m = /READY (\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({ child, url: m[1]! });
      }
    });
    child.stderr.on('data', (chunk: Buffer) => {
      err += chunk.toString();
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      if (!/READY/.test(out)) reject(new Error(`server exited ${code}: ${err}`));
    });
  });
