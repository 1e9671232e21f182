import type { ServiceParts } from '../../infra/services';
import { mergeServiceParts } from '../../infra/services';
import { loadServices } from '../../app/services';

/**
 * The services a test platform runs, by name, so that a suite can start the same ones in this
 * process (all-in-one) or in the role processes of the split topology (tests/support/split.ts),
 * which load them by the names they receive in PLATFORM_TEST_SERVICES. A new service joins the
 * split run by adding its entry here; a suite-specific fixture (routes that misbehave on purpose,
 * ports installed by a start hook) lives in a file of its own and gets an entry too.
 * Loaders import lazily: a role process pays only for what it runs.
 */
export const TEST_SERVICES = {
  /** every service, as `npm start` discovers it (write-api/, read-api/, projections/, workers/) */
  platform: loadServices,
  /** the kernel's sample context: counters with an inline and an async projection */
  tally: async () => {
    const [{ tallyRead, tallyWrite }, tally] = await Promise.all([
      import('./tally/routes'),
      import('./tally/projections'),
    ]);
    return mergeServiceParts({ write: [tallyWrite], read: [tallyRead], projections: tally.default.projections });
  },
  identity: async () => {
    const [write, read, projections, { identityPeople }] = await Promise.all([
      import('../../write-api/identity'),
      import('../../read-api/identity'),
      import('../../projections/identity'),
      import('../../commands/identity/people'),
    ]);
    return mergeServiceParts({
      write: [write.default],
      read: [read.default],
      projections: projections.default.projections,
      people: identityPeople,
    });
  },
  money: async () => (await import('./money')).moneyServices,
  /** the files service with identity's read models (tests/support/files.ts) */
  files: async () => (await import('./files')).filesServices,
  /** billing with identity's read models (its tenants and owners): suites name identity too for real tokens */
  billing: async () => (await import('./billing')).billingServices,
  /** the notification hub with identity's read models (recipients by userId) */
  notify: async () => (await import('./notify')).notifyServices,
  /** the audit service with the gateway's fallback replay (needs one ClickHouse for all roles: chdb is one process's) */
  audit: async () => (await import('./audit')).auditServices,
  /** the module registry and the event bus (routes, read models, workers) */
  events: async () => (await import('./events')).eventsServices,
  /** the module registry and the data layer (migrations, generated CRUD, introspection) */
  data: async () => (await import('./data')).dataServices,
  /** the gateway's audit fallback replay */
  /** a route that fails unexpectedly, for the 5xx of the hardening suite (tests/int/gateway/hardening-fixture.ts) */
  'hardening-fixture': async () => (await import('../int/gateway/hardening-fixture')).hardeningFixture,
  /** routes that make errors reach the top of the process, for the process policy suite (tests/int/http/process-fixture.ts) */
  'process-fixture': async () => (await import('../int/http/process-fixture')).processFixture,
  /** routes and gateway ports the edge suite needs (tests/int/gateway/edge-fixture.ts) */
  'edge-fixture': async () => (await import('../int/gateway/edge-fixture')).edgeFixture,
} satisfies Record<string, () => Promise<ServiceParts>>;

export type TestServiceName = keyof typeof TEST_SERVICES;

/** services whose roles need one ClickHouse between them in the split run (chdb is one process's) */
export const NEEDS_CLICKHOUSE: ReadonlySet<TestServiceName> = new Set(['audit', 'platform']);

export const isTestServiceName = (name: string): name is TestServiceName => Object.hasOwn(TEST_SERVICES, name);

/**
 * the named services; a projection two of them bring (money brings identity's read models) is kept
 * once, and so is a route or worker set two of them bring (data and events both bring the module registry)
 */
export const loadTestServices = async (names: readonly TestServiceName[]): Promise<ServiceParts> => {
  const merged = mergeServiceParts(...(await Promise.all(names.map((name) => TEST_SERVICES[name]()))));
  const once = <T>(list: T[]): T[] => list.filter((x, i) => list.indexOf(x) === i);
  return {
    write: once(merged.write),
    read: once(merged.read),
    workers: once(merged.workers),
    projections: merged.projections.filter((p, i) => merged.projections.findIndex((q) => q.name === p.name) === i),
    ...(merged.people ? { people: merged.people } : {}),
  };
};
