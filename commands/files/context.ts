import type { Linker } from '../../domain/files/links';
import { DEFAULT_LINK_TTL_SECONDS, LINK_KEY_PURPOSE, LINK_SCHEME, linkerOf } from '../../domain/files/links';
import type { Kernel } from '../../infra/kernel';
import type { ObjectStore } from '../../infra/objects';
import type { VirusScanner } from '../../infra/scan';
import { linkSigner } from '../../infra/security/signed-links';
import type { OwnerDirectory } from './lookups';
import type { FileReferences } from './references';
import { platformReferences } from './references';
import type { FilesSettings } from './settings';
import { filesSettingsOf } from './settings';
import type { TaskKind } from './tasks';

/** what the files handlers and workers need beyond a unit of work: the kernel, settings, engines and ports */
export interface FilesContext {
  kernel: Kernel;
  settings: FilesSettings;
  objects: ObjectStore;
  /** clamd, or null when CLAMD_HOST is not set */
  scanner: VirusScanner | null;
  /** whom an infected upload is reported to (through kernel.notifications) */
  owners: OwnerDirectory;
  references: FileReferences;
  /** signed links of the tenant's files, valid ttlSeconds (default 300 s) */
  linker(tenantId: string, ttlSeconds?: number): Linker;
  /** tells this process's workers that a task is waiting (other processes find it when they next look) */
  wake(kind: TaskKind): void;
  onWake(kind: TaskKind, listener: () => void): () => void;
}

export interface FilesOverrides {
  settings?: Partial<FilesSettings>;
  owners?: OwnerDirectory;
  references?: FileReferences;
}

const contexts = new WeakMap<Kernel, FilesContext>();

/** installs the ports; tests pass their own */
export const configureFiles = (kernel: Kernel, overrides: FilesOverrides = {}): FilesContext => {
  const settings = { ...filesSettingsOf(kernel.config), ...overrides.settings };
  const signer = linkSigner(kernel.engines.secrets.key(LINK_KEY_PURPOSE), LINK_SCHEME);
  const listeners = new Map<TaskKind, Set<() => void>>();
  const context: FilesContext = {
    kernel,
    settings,
    objects: kernel.engines.objects,
    scanner: kernel.engines.scanner,
    owners: overrides.owners ?? kernel.people,
    references: overrides.references ?? platformReferences(kernel.people),
    linker: (tenantId, ttlSeconds = DEFAULT_LINK_TTL_SECONDS) =>
      linkerOf(
        signer.sign,
        kernel.config.rootUrl,
        tenantId,
        Math.floor(kernel.clock.now().getTime() / 1000) + ttlSeconds,
      ),
    wake: (kind) => {
      for (const listener of listeners.get(kind) ?? []) listener();
    },
    onWake: (kind, listener) => {
      const set = listeners.get(kind) ?? new Set();
      listeners.set(kind, set);
      set.add(listener);
      return () => set.delete(listener);
    },
  };
  contexts.set(kernel, context);
  return context;
};

export const filesContext = (kernel: Kernel): FilesContext => contexts.get(kernel) ?? configureFiles(kernel);
