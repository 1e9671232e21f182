import type { Decider } from '../shared/decider';
import { assertNever } from '../shared/decider';
import type { ModuleEvent, ModuleRegisteredData } from './events';

/** A module of the registry: one stream per module, under the platform tenant. */
export type RegisteredModule =
  | { status: 'none' }
  | { status: 'registered'; moduleId: string; slug: string; version: string };

export type ModuleCommand = { type: 'RegisterModule'; data: ModuleRegisteredData };

export const moduleDecider: Decider<RegisteredModule, ModuleCommand, ModuleEvent> = {
  initialState: () => ({ status: 'none' }),
  evolve: (_s, e) => {
    switch (e.type) {
      case 'module.registry.registered':
        return { status: 'registered', moduleId: e.data.moduleId, slug: e.data.slug, version: e.data.version };
      default:
        return assertNever(e.type);
    }
  },
  decide: (c, s) => {
    switch (c.type) {
      // the slug's uniqueness is checked under a lock by the handler; a stream registered already is done
      case 'RegisterModule':
        return s.status === 'none' ? [{ type: 'module.registry.registered', data: c.data }] : [];
      default:
        return assertNever(c.type);
    }
  },
};
