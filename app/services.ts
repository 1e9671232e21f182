/**
 * The platform's services, named one by one: what `npm start` and every `platform serve` role run.
 * A new context adds its lines here (in the order of its name, as before). Each import is a literal
 * path, so the layer lint sees it and a bundler follows it; each is lazy, so a CLI command that
 * needs no service (migrate, a projection rebuild of one context) does not load them all.
 */
import type { ProjectionSet, RoutePlugin, ServiceParts, WorkerSet } from '../infra/services';

const defaults = async <T>(imports: Promise<{ default: T }>[]): Promise<T[]> =>
  (await Promise.all(imports)).map((m) => m.default);

export const loadServices = async (): Promise<ServiceParts> => {
  const [write, read, sets, workers, { identityPeople }] = await Promise.all([
    defaults<RoutePlugin>([
      import('../write-api/audit'),
      import('../write-api/billing'),
      import('../write-api/data'),
      import('../write-api/events'),
      import('../write-api/files'),
      import('../write-api/identity'),
      import('../write-api/modules'),
      import('../write-api/money'),
      import('../write-api/notify'),
    ]),
    defaults<RoutePlugin>([
      import('../read-api/audit'),
      import('../read-api/billing'),
      import('../read-api/data'),
      import('../read-api/events'),
      import('../read-api/files'),
      import('../read-api/identity'),
      import('../read-api/modules'),
      import('../read-api/money'),
      import('../read-api/notify'),
    ]),
    defaults<ProjectionSet>([
      import('../projections/audit'),
      import('../projections/billing'),
      import('../projections/events'),
      import('../projections/files'),
      import('../projections/identity'),
      import('../projections/modules'),
      import('../projections/money'),
      import('../projections/notify'),
    ]),
    defaults<WorkerSet>([
      import('../workers/audit'),
      import('../workers/billing'),
      import('../workers/data'),
      import('../workers/events'),
      import('../workers/files'),
      import('../workers/identity'),
      import('../workers/money'),
      import('../workers/notify'),
    ]),
    // the directory of people reads identity's read models, which run here (infra/people.ts)
    import('../commands/identity/people'),
  ]);
  return { write, read, projections: sets.flatMap((s) => s.projections), workers, people: identityPeople };
};
