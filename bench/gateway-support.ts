import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Authenticator } from '../infra/http/auth';
import { defineRoutes } from '../infra/services';
import { exportKeyRing, importKeyRing, KeyRing, type PersistedSigningKey } from '../infra/security/jwt';
import { SecretBox } from '../infra/security/secret-box';

/**
 * An authenticator as identity will install it: ES256 access tokens verified by the key ring
 * (with its verified-token cache), permissions from the roles.
 */
export const benchAuthenticator = async (
  /** the ring of another process (its `shared`): HTTP workers of one bench verify the one token */
  shared?: string,
): Promise<{ authenticator: Authenticator; token: string; shared: string }> => {
  const options = { issuer: 'https://id.bench', audience: 'platform', maxTokenLifetimeSeconds: 3600 };
  // a throwaway box: the ring only crosses to the bench's own worker processes
  const box = new SecretBox([{ id: 'bench', key: Buffer.alloc(32, 7) }]);
  const ring = shared
    ? await importKeyRing(JSON.parse(shared) as PersistedSigningKey[], box, options)
    : await KeyRing.generate(options);
  const token = await ring.sign(
    { sub: 'user-1', email: 'u@example.com', tenantId: 'tenant-bench', roles: ['Member'] },
    { expiresInSeconds: 3600 },
  );
  const authenticator: Authenticator = {
    authenticate: async (t) => {
      const claims = await ring.verify(t);
      return {
        userId: claims.sub,
        tenantId: claims.tenantId,
        email: claims.email,
        roles: claims.roles,
        permissions: new Set(['bench.*', 'tally.*']),
        emailVerified: true,
      };
    },
  };
  return { authenticator, token, shared: shared ?? JSON.stringify(await exportKeyRing(ring, box)) };
};

const Ping = z.object({ id: z.string(), n: z.number().int(), at: z.string() });
export const pingHandler = async (request: { query: unknown }) => ({
  id: 'ping',
  n: Number((request.query as { n?: string | number }).n ?? 1),
  at: '2026-01-01T00:00:00.000Z',
});

/** GET /v1/bench/ping?n=…: a route with a permission, a query schema and a response schema, no I/O */
export const benchRoutes = defineRoutes({
  namespace: 'data',
  permissions: { 'bench.read': 'read the benchmark route' },
  register(app) {
    app.withTypeProvider<ZodTypeProvider>().get(
      '/bench/ping',
      {
        config: { access: 'permission', permission: 'bench.read' },
        schema: {
          querystring: z.object({ n: z.coerce.number().int().min(1).max(100).default(1) }),
          response: { 200: Ping },
        },
      },
      pingHandler,
    );
  },
});

/** CPU seconds (user + system) a process has used so far, from /proc */
export const cpuSecondsOf = (pid: number): number => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (100/s)
};

/** runs a command, resolving with its stdout and the CPU seconds it used */
export const run = (command: string, args: string[]): Promise<{ stdout: string; cpuSeconds: number }> =>
  new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'inherit'] });
    let stdout = '';
    let cpu = 0;
    const sample = setInterval(() => {
      try {
        cpu = cpuSecondsOf(child.pid!);
      } catch {
        /* exited */
      }
    }, 200);
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    child.on('error', reject);
    child.on('close', (code) => {
      clearInterval(sample);
      if (code === 0) resolve({ stdout, cpuSeconds: cpu });
      else reject(new Error(`${command} exited with ${code}`));
    });
  });

export const KONG =
  'Kong Gateway (published): about 8,600 req/s per vCPU with rate limiting and key authentication, p99 8.5 ms at saturation';
