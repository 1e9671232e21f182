import type { Kernel } from '../../infra/kernel';
import { DATA_ROLE_USABLE_SQL } from '../../domain/data/access';
import { ModelCatalog } from './catalog';

/** the data layer's per-process state: the model catalog, and whether the data role can be taken here */
export interface DataContext {
  catalog: ModelCatalog;
  useRole(): Promise<boolean>;
}

const contexts = new WeakMap<Kernel, DataContext>();

export const dataContext = (kernel: Kernel): DataContext => {
  let found = contexts.get(kernel);
  if (!found) {
    let role: Promise<boolean> | null = null;
    found = {
      catalog: new ModelCatalog(),
      useRole: () =>
        (role ??= kernel.db
          .query<{ usable: boolean }>(DATA_ROLE_USABLE_SQL)
          .then((r) => r.rows[0]?.usable ?? false)
          .catch(() => {
            role = null;
            return false;
          })),
    };
    contexts.set(kernel, found);
  }
  return found;
};
