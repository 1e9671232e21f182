/**
 * What the registry's and the bus's commands read of the registry (rm.modules, inline: exact in the
 * command's transaction): the read side's queries, the one copy — re-exported here, the port other
 * contexts' commands (the bus) read the registry through.
 */
import type { ModuleRecord } from '../../domain/modules/views';
import type { Kernel } from '../../infra/kernel';
import { findModule } from '../../projections/modules/queries';
import { dataContext } from '../data/context';

export { allManifests, findModule } from '../../projections/modules/queries';

/** a registered module by id, from this process's memory while the registry's epoch stands (ModuleRows) */
export const cachedModule = (kernel: Kernel, id: string): Promise<ModuleRecord | null> =>
  dataContext(kernel).modules.record(id, () => findModule(kernel.db, id));
