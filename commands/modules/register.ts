import { PLATFORM_TENANT_ID } from '../../domain/identity/constants';
import { moduleErrors } from '../../domain/modules/errors';
import type { Manifest } from '../../domain/modules/manifest';
import { manifestProblems } from '../../domain/modules/manifest';
import type { FieldError } from '../../domain/shared/errors';
import type { UnitOfWork } from '../../infra/eventstore/unit-of-work';
import type { Kernel } from '../../infra/kernel';
import { moduleView } from '../../domain/modules/views';
import { findModule } from './lookups';
import { ModuleAggregate, moduleStream } from './aggregates';

/**
 * What is wrong with a manifest, its event endpoint included: https outside development and test
 * (it receives every event it subscribes to), and a public address unless the outbound guard
 * allows private ones (infra/security/outbound.ts; the deliveries are checked again at connect time).
 */
export const manifestProblemsOf = async (kernel: Kernel, manifest: Manifest): Promise<FieldError[]> => {
  const problems = manifestProblems(manifest);
  const endpoint = manifest.events.endpoint;
  if (!endpoint) return problems;
  if (new URL(endpoint).protocol !== 'https:' && !['development', 'test'].includes(kernel.config.PLATFORM_ENV)) {
    problems.push({ field: 'events.endpoint', message: 'the endpoint must be https', code: 'HTTPS_REQUIRED' });
  }
  const refused = await kernel.outbound.urlProblem('events.endpoint', endpoint);
  if (refused) problems.push(refused);
  return problems;
};

/**
 * Registers a module from its manifest (platform owner): one module per slug, its manifest
 * checked by manifestProblemsOf. The command runs in the platform tenant's unit of work (the
 * registry is the platform's).
 */
export const registerModule = async (
  kernel: Kernel,
  uow: UnitOfWork,
  manifest: Manifest,
  registeredBy: string,
): Promise<ReturnType<typeof moduleView>> => {
  // before anything is written: the endpoint's check may wait for a name to resolve
  const problems = await manifestProblemsOf(kernel, manifest);
  if (problems.length) throw moduleErrors.invalidManifest(problems);
  await uow.tx.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`modules.slug:${manifest.slug}`]);
  if (await findModule(uow.tx, manifest.slug)) throw moduleErrors.slugTaken(manifest.slug);
  const moduleId = kernel.ids.next();
  const registeredAt = kernel.clock.now();
  const data = {
    moduleId,
    slug: manifest.slug,
    version: manifest.version,
    manifest,
    registeredBy,
    registeredAt: registeredAt.toISOString(),
  };
  uow.decide(ModuleAggregate, await uow.load(ModuleAggregate, moduleStream(moduleId)), {
    type: 'RegisterModule',
    data,
  });
  return moduleView({
    id: moduleId,
    slug: manifest.slug,
    name: manifest.name ?? null,
    version: manifest.version,
    description: manifest.description ?? null,
    status: 'registered',
    manifest,
    registered_by: registeredBy,
    registered_at: registeredAt,
    updated_at: registeredAt,
  });
};

/** the unit of work of a registry command: the platform tenant, whoever asks */
export const registryMeta = (actorId: string, traceId: string | null) => ({
  tenantId: PLATFORM_TENANT_ID,
  actorId,
  traceId,
  correlationId: traceId,
  causationId: null,
});
