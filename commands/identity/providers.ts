import type { Kernel } from '../../infra/kernel';

/** the provider registry (filled by the providers part) */
export interface ProviderInfo { id: string; type: string; name: string }
export const providerList = (_kernel: Kernel): ProviderInfo[] => [{ id: 'password', type: 'password', name: 'Email and password' }];
