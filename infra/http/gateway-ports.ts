import type { Kernel } from '../kernel';

/**
 * What the gateway asks other services about a tenant. Each has a default that holds until the
 * owning service exists: billing sets the rate ceiling per plan, the module registry the installed
 * modules, tenant settings the CORS origins. A service installs its answer from its
 * RoutePlugin.start(kernel) with `setGatewayPorts(kernel, { ... })`; the gateway reads the ports
 * per request, so installing them after the app is built is fine.
 */
/** what a suspended tenant meets on a mutation: refused (it writes the tenant's data) or allowed (route config.whileSuspended) */
export type WhileSuspended = 'refused' | 'allowed';

/** what billing's admission knows of a request (spec 001, Limit enforcement flow) */
export interface AdmissionRequest {
  tenantId: string;
  method: string;
  /** the route template, e.g. /v1/users/:id */
  route: string;
  /** the API namespace of the route's plugin */
  namespace: string | null;
  /** the counted resource the route creates, when its config says so (config.counts) */
  counts?: string;
  /** what a suspended tenant meets on the route, when it is a mutation (config.whileSuspended; undeclared: refused) */
  whileSuspended?: WhileSuspended;
}

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
  /**
   * billing's admission of an authenticated request: resolves to let it through, throws the
   * problem that refuses it (402 for a suspended or terminated subscription or a plan limit);
   * passes everything until billing installs it (BILLING_ENABLED=false, the self-hosted case)
   */
  admit(request: AdmissionRequest): Promise<void>;
}

/** Namespaces of the platform itself: always installed, whatever a tenant's module list says. */
export const PLATFORM_NAMESPACES: ReadonlySet<string> = new Set(['iam', 'gateway', 'billing', 'audit', 'events']);

export const defaultGatewayPorts: GatewayPorts = {
  tenantRateCeiling: async () => null,
  installedModules: async () => 'all',
  moduleStatus: async () => 'unknown',
  tenantCorsOrigins: async () => [],
  originKnownToAnyTenant: async () => false,
  admit: async () => undefined,
};

const installed = new WeakMap<Kernel, GatewayPorts>();

export const gatewayPorts = (kernel: Kernel): GatewayPorts => installed.get(kernel) ?? defaultGatewayPorts;

export const setGatewayPorts = (kernel: Kernel, ports: Partial<GatewayPorts>): void => {
  installed.set(kernel, { ...gatewayPorts(kernel), ...ports });
};
