import { fileURLToPath } from 'node:url';
import { readModuleFolder } from '../../app/cli/module-folder';
import type { ServiceParts } from '../../infra/services';
import { mergeServiceParts } from '../../infra/services';
import modulesProjections from '../../projections/modules';
import dataRead from '../../read-api/data';
import modulesRead from '../../read-api/modules';
import dataWrite from '../../write-api/data';
import modulesWrite from '../../write-api/modules';

/** the module registry and the data layer, as discovery would find them */
export const dataServices: ServiceParts = mergeServiceParts({
  write: [modulesWrite, dataWrite],
  read: [modulesRead, dataRead],
  projections: modulesProjections.projections,
});

/** the sample module of the repository (modules/crm) as the CLI registers it */
export const crmManifest = () => readModuleFolder(fileURLToPath(new URL('../../modules/crm', import.meta.url)));
