import type { PresetName } from '../../domain/files/constants';
import type { Kernel } from '../../infra/kernel';
import type { ObjectStore } from '../../infra/objects';
import type { VirusScanner } from '../../infra/scan';
import type { Linker } from '../../projections/files/queries';
import { LINK_KEY_PURPOSE, linkUrl } from './links';
import type { OwnerDirectory } from './lookups';
import { identityOwners } from './lookups';
import type { FileNotices } from './notices';
import { mailNotices } from './notices';
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
  notices: FileNotices;
  references: FileReferences;
  /** signed links of the tenant's files, valid ttlSeconds (default: the settings' 300 s) */
  linker(tenantId: string, ttlSeconds?: number): Linker;
  /** the expiry of a link made now with this lifetime, in epoch seconds */
  linkExpiry(ttlSeconds: number): number;
  /** tells this process's workers that a task is waiting (other processes find it when they next look) */
  wake(kind: TaskKind): void;
  onWake(kind: TaskKind, listener: () => void): () => void;
}

export interface FilesOverrides {
  settings?: Partial<FilesSettings>;
  notices?: FileNotices;
  owners?: OwnerDirectory;
  references?: FileReferences;
}

const contexts = new WeakMap<Kernel, FilesContext>();

/** installs the ports (the notification hub will replace notices); tests pass their own */
export const configureFiles = (kernel: Kernel, overrides: FilesOverrides = {}): FilesContext => {
  const settings = { ...filesSettingsOf(kernel.config), ...overrides.settings };
  const key = kernel.engines.secrets.key(LINK_KEY_PURPOSE);
  const listeners = new Map<TaskKind, Set<() => void>>();
  const linkExpiry = (ttlSeconds: number) => Math.floor(kernel.clock.now().getTime() / 1000) + ttlSeconds;
  const context: FilesContext = {
    kernel, settings, objects: kernel.engines.objects, scanner: kernel.engines.scanner,
    notices: overrides.notices ?? mailNotices(kernel.db, kernel.engines.mail, overrides.owners ?? identityOwners),
    references: overrides.references ?? platformReferences,
    linker: (tenantId, ttlSeconds = settings.linkTtlSeconds) => {
      const expires = linkExpiry(ttlSeconds);
      return (fileId: string, variant: 'original' | PresetName) => linkUrl(key, kernel.config.rootUrl, { tenantId, fileId, variant, expires });
    },
    linkExpiry,
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
