import type { FastifyInstance } from 'fastify';
import type { RegisteredProjection } from './projections/projection';
import type { Kernel } from './kernel';
import type { People } from './people';

/**
 * The contract between the kernel and a service (was infra/modules.ts; "module" names a
 * third-party module of the data layer): the pieces of a service, each in its own folder and named
 * in app/services.ts:
 *   write-api/<context>/index.ts  → default export RoutePlugin (POST/PATCH/PUT/DELETE)
 *   read-api/<context>/index.ts   → default export RoutePlugin (GET)
 *   projections/<context>/index.ts → default export ProjectionSet
 *   workers/<context>/index.ts    → default export WorkerSet
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

export interface ServiceParts {
  write: RoutePlugin[];
  read: RoutePlugin[];
  projections: RegisteredProjection[];
  workers: WorkerSet[];
  /**
   * the directory of people (kernel.people), given with identity's read models by whoever runs
   * them (identity's commands/identity/people.ts); absent, the platform knows nobody (noPeople)
   */
  people?: People;
}

export const mergeServiceParts = (...parts: Partial<ServiceParts>[]): ServiceParts => {
  const people = parts.find((p) => p.people)?.people;
  return {
    write: parts.flatMap((p) => p.write ?? []),
    read: parts.flatMap((p) => p.read ?? []),
    projections: parts.flatMap((p) => p.projections ?? []),
    workers: parts.flatMap((p) => p.workers ?? []),
    ...(people ? { people } : {}),
  };
};
