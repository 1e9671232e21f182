import { tokenSettings } from '../../domain/identity/access';
import type { Kernel } from '../../infra/kernel';
import type { IdentityRuntime } from '../../projections/identity/shared/runtime';
import { startIdentityRuntime } from '../../projections/identity/shared/runtime';
import { accessLoader } from './lookups';

/**
 * Starts identity's runtime (projections/identity/shared/runtime.ts, shared with the read side)
 * with the commands' access loader, so the cached access and the authenticator are installed: the
 * write plugin's start hook (write-api reaches the runtime through its commands).
 */
export const startIdentityCommands = (kernel: Kernel): Promise<IdentityRuntime> =>
  startIdentityRuntime(kernel, tokenSettings(kernel.config.rootUrl), accessLoader(kernel));
