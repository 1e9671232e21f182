/**
 * Shared pieces of the identity benchmarks: a running platform with the real identity service
 * (its own database on the PostgreSQL of scripts/test-infra.sh: `source .test-infra/env` first)
 * and registered users. Keycloak's published sizing is the comparison line: 15 password logins/s
 * and 120 refresh-token grants/s per vCPU.
 */
import { cpus } from 'node:os';
import type { IdentityPlatform, Registered } from '../tests/support/identity';
import { registerUser, startIdentityPlatform } from '../tests/support/identity';

export const KEYCLOAK_PER_VCPU = { logins: 15, refreshes: 120 } as const;

export const startBenchPlatform = async (): Promise<IdentityPlatform> =>
  startIdentityPlatform({ env: { DATABASE_POOL_SIZE: '20' } });

export const registerMany = async (p: IdentityPlatform, n: number): Promise<Registered[]> => {
  const users: Registered[] = [];
  for (let i = 0; i < n; i += 4)
    users.push(...(await Promise.all(Array.from({ length: Math.min(4, n - i) }, () => registerUser(p)))));
  return users;
};

export const perCore = (perSecond: number, reference: number): string => {
  const cores = cpus().length;
  return `${(perSecond / cores).toFixed(1)}/s per core (Keycloak: ${reference}/s per vCPU, ${(perSecond / cores / reference).toFixed(1)}×)`;
};

/** BENCH_SECONDS shortens or lengthens a run (default 10 s per scenario, 1 s with BENCH_SMOKE=1) */
export const seconds = (): number => Number(process.env.BENCH_SECONDS ?? (process.env.BENCH_SMOKE === '1' ? 1 : 10));
