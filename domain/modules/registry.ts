import type { Decider } from '../shared/decider';
import { assertNever } from '../shared/decider';
import { registryErrors } from './errors';
import type {
  ModuleActivatedData,
  ModuleDeactivatedData,
  ModuleEvent,
  ModulePermissionsChangedData,
  ModuleRegisteredData,
  ModuleUpdatedData,
} from './events';
import { compareSemver } from '../events/semver';

/** A module of the registry: one stream per module, under the platform tenant; its tenants' installations with it. */
export type RegisteredModule =
  | { status: 'none' }
  | {
      status: 'registered' | 'deleted' | 'purged';
      moduleId: string;
      slug: string;
      version: string;
      tenants: Record<string, 'active' | 'inactive'>;
    };

export type ModuleCommand =
  | { type: 'RegisterModule'; data: ModuleRegisteredData }
  | { type: 'UpdateModule'; data: ModuleUpdatedData }
  | { type: 'ActivateModule'; data: ModuleActivatedData }
  | { type: 'DeactivateModule'; data: ModuleDeactivatedData }
  | { type: 'DeleteModule'; data: { moduleId: string; slug: string; deletedBy: string; at: string } }
  | { type: 'PurgeModule'; data: { moduleId: string; slug: string; purgedBy: string; at: string } }
  | { type: 'RecordPermissionsChanged'; data: ModulePermissionsChangedData };

type Known = Exclude<RegisteredModule, { status: 'none' }>;

const live = (s: RegisteredModule): Known => {
  if (s.status === 'none') throw registryErrors.deleted();
  if (s.status !== 'registered') throw registryErrors.deleted();
  return s;
};

export const moduleDecider: Decider<RegisteredModule, ModuleCommand, ModuleEvent> = {
  initialState: () => ({ status: 'none' }),
  evolve: (s, e) => {
    switch (e.type) {
      case 'module.registry.registered':
        return {
          status: 'registered',
          moduleId: e.data.moduleId,
          slug: e.data.slug,
          version: e.data.version,
          tenants: {},
        };
      case 'module.registry.updated':
        return s.status === 'none' ? s : { ...s, version: e.data.version };
      case 'module.registry.activated':
        return s.status === 'none' ? s : { ...s, tenants: { ...s.tenants, [e.data.tenantId]: 'active' } };
      case 'module.registry.deactivated':
        return s.status === 'none' ? s : { ...s, tenants: { ...s.tenants, [e.data.tenantId]: 'inactive' } };
      case 'module.registry.deleted':
        return s.status === 'none' ? s : { ...s, status: 'deleted' };
      case 'module.registry.purged':
        return s.status === 'none' ? s : { ...s, status: 'purged', tenants: {} };
      case 'module.registry.permissions_changed':
        return s;
      default:
        return assertNever(e);
    }
  },
  decide: (c, s) => {
    switch (c.type) {
      // the slug's uniqueness is checked under a lock by the handler; a stream registered already is done
      case 'RegisterModule':
        return s.status === 'none' ? [{ type: 'module.registry.registered', data: c.data }] : [];
      case 'UpdateModule': {
        const m = live(s);
        if (compareSemver(c.data.version, m.version) <= 0)
          throw registryErrors.versionNotNewer(m.version, c.data.version);
        return [{ type: 'module.registry.updated', data: { ...c.data, previousVersion: m.version } }];
      }
      case 'ActivateModule': {
        const m = live(s);
        if (m.tenants[c.data.tenantId] === 'active') return [];
        if (!c.data.installed && m.tenants[c.data.tenantId] === undefined) throw registryErrors.notInstalled();
        return [
          {
            type: 'module.registry.activated',
            data: { ...c.data, installed: m.tenants[c.data.tenantId] === undefined },
          },
        ];
      }
      case 'DeactivateModule': {
        const m = live(s);
        if (m.tenants[c.data.tenantId] === undefined) throw registryErrors.notInstalled();
        return m.tenants[c.data.tenantId] === 'inactive' ? [] : [{ type: 'module.registry.deactivated', data: c.data }];
      }
      case 'DeleteModule':
        if (s.status === 'deleted') return [];
        live(s);
        return [{ type: 'module.registry.deleted', data: c.data }];
      case 'PurgeModule':
        if (s.status === 'none' || s.status === 'purged') throw registryErrors.deleted();
        if (s.status !== 'deleted') throw registryErrors.purgeNeedsDelete();
        return [{ type: 'module.registry.purged', data: c.data }];
      // a reconciliation that changed nothing records nothing
      case 'RecordPermissionsChanged':
        if (s.status === 'none') throw registryErrors.deleted();
        return c.data.registered.length + c.data.archived.length === 0
          ? []
          : [{ type: 'module.registry.permissions_changed', data: c.data }];
      default:
        return assertNever(c);
    }
  },
};
