import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import type { RegisteredProjection } from './projections/projection';
import type { Kernel } from './kernel';

/**
 * The pieces of a service, each found by convention in its own folder, so that adding a service
 * means writing them and nothing else:
 *   write-api/<context>/index.ts  → default export RoutePlugin (POST/PATCH/PUT/DELETE)
 *   read-api/<context>/index.ts   → default export RoutePlugin (GET)
 *   projections/<context>/index.ts → default export ProjectionSet
 */
export interface RoutePlugin {
  /** the OpenAPI namespace of spec 000 (iam, money, files, …) */
  namespace: string;
  /** permissions this context registers (key → description) */
  permissions?: Record<string, string>;
  register(app: FastifyInstance, kernel: Kernel): void | Promise<void>;
  /**
   * runs once per process after migrations and projections are ready and before the process
   * reports ready (load keys, install the authenticator, warm caches); must be idempotent
   */
  start?(kernel: Kernel): Promise<void>;
}

/** A long-running loop of a context (hold expiry, fallback replay, delivery). */
export interface Worker {
  name: string;
  start(): void;
  stop(): Promise<void>;
}

/** workers/<context>/index.ts → default export WorkerSet; run by the workers role (and `platform start`) */
export interface WorkerSet {
  workers(kernel: Kernel): Worker[];
}

export interface ProjectionSet {
  projections: RegisteredProjection[];
}

export const defineRoutes = (plugin: RoutePlugin): RoutePlugin => plugin;
export const defineProjections = (set: ProjectionSet): ProjectionSet => set;
export const defineWorkers = (set: WorkerSet): WorkerSet => set;

export interface ServiceModules {
  write: RoutePlugin[];
  read: RoutePlugin[];
  projections: RegisteredProjection[];
  workers: WorkerSet[];
}

const ROOT = fileURLToPath(new URL('..', import.meta.url));

const discover = async <T>(folder: string): Promise<T[]> => {
  const dir = join(ROOT, folder);
  const entries = await readdir(dir).catch(() => [] as string[]);
  const found: T[] = [];
  for (const name of entries.sort()) {
    const index = join(dir, name, 'index.ts');
    if (!(await stat(index).catch(() => null))?.isFile()) continue;
    const mod = (await import(index)) as { default?: T };
    if (!mod.default) throw new Error(`${folder}/${name}/index.ts must have a default export`);
    found.push(mod.default);
  }
  return found;
};

export const discoverModules = async (): Promise<ServiceModules> => {
  const [write, read, sets, workers] = await Promise.all([
    discover<RoutePlugin>('write-api'),
    discover<RoutePlugin>('read-api'),
    discover<ProjectionSet>('projections'),
    discover<WorkerSet>('workers'),
  ]);
  return { write, read, projections: sets.flatMap((s) => s.projections), workers };
};

export const mergeModules = (...parts: Partial<ServiceModules>[]): ServiceModules => ({
  write: parts.flatMap((p) => p.write ?? []),
  read: parts.flatMap((p) => p.read ?? []),
  projections: parts.flatMap((p) => p.projections ?? []),
  workers: parts.flatMap((p) => p.workers ?? []),
});
