import type { Kernel } from '../infra/kernel';

/**
 * What the gateway asks other services about a tenant. Each has a default that holds until the
 * owning service exists: billing sets the rate ceiling per plan, the module registry the installed
 * modules, tenant settings the CORS origins. A service installs its answer from its
 * RoutePlugin.start(kernel) with `setGatewayPorts(kernel, { ... })`; the gateway reads the ports
 * per request, so installing them after the app is built is fine.
 */
export interface GatewayPorts {
  /** requests per minute the tenant as a whole may make (billing plan); null: the configured default */
  tenantRateCeiling(tenantId: string): Promise<number | null>;
  /** the modules (API namespaces) installed for the tenant; 'all' when every module is */
  installedModules(tenantId: string): Promise<ReadonlySet<string> | 'all'>;
  /**
   * the module registry's answer for a module slug: 'installed' (active for the tenant), 'absent'
   * (registered, not active for the tenant, or deleted), 'unknown' (no module of that slug: a
   * platform service's namespace). Checked for the route's namespace and for /v1/data/<module>/….
   */
  moduleStatus(tenantId: string, slug: string): Promise<'installed' | 'absent' | 'unknown'>;
  /** origins the tenant allows on top of CORS_ALLOWED_ORIGINS */
  tenantCorsOrigins(tenantId: string): Promise<readonly string[]>;
  /** whether any tenant allows this origin (a preflight carries no token, so no tenant yet) */
  originKnownToAnyTenant(origin: string): Promise<boolean>;
}

/** Namespaces of the platform itself: always installed, whatever a tenant's module list says. */
export const PLATFORM_NAMESPACES: ReadonlySet<string> = new Set(['iam', 'gateway', 'billing', 'audit', 'events']);

export const defaultGatewayPorts: GatewayPorts = {
  tenantRateCeiling: async () => null,
  installedModules: async () => 'all',
  moduleStatus: async () => 'unknown',
  tenantCorsOrigins: async () => [],
  originKnownToAnyTenant: async () => false,
};

const installed = new WeakMap<Kernel, GatewayPorts>();

export const gatewayPorts = (kernel: Kernel): GatewayPorts => installed.get(kernel) ?? defaultGatewayPorts;

export const setGatewayPorts = (kernel: Kernel, ports: Partial<GatewayPorts>): void => {
  installed.set(kernel, { ...gatewayPorts(kernel), ...ports });
};
