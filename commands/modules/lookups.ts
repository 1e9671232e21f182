/**
 * What the registry's and the bus's commands read of the registry (rm.modules, inline: exact in the
 * command's transaction): the read side's queries, the one copy — re-exported here, the port other
 * contexts' commands (the bus) read the registry through.
 */
export { allManifests, findModule } from '../../projections/modules/queries';
