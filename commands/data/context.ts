/**
 * The data layer's per-process state (the model catalog, whether the data role can be taken) and
 * the catalog reads, one copy shared with the read side (projections/data/queries.ts): the port
 * the data commands and the registry's commands (commands/modules) read the catalog through.
 */
export {
  cachedModuleRowOf,
  dataContext,
  loadModels,
  moduleRegistryChanged,
  moduleRowOf,
  scopeToTenant,
  tenantScopeStatement,
} from '../../projections/data/queries';
export type { DataContext } from '../../projections/data/queries';
