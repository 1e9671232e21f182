import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { moduleErrors } from '../../domain/modules/errors';
import { permissionCatalogEvents } from '../../domain/modules/events';
import { Manifest } from '../../domain/modules/manifest';
import { IssuedKeyView, ModuleView } from '../../domain/modules/views';
import { PLATFORM_WILDCARD } from '../../domain/shared/permissions';
import { issueKey, moduleKeyScheme, revokeKey } from '../../commands/modules/keys';
import { registerModule, registryMeta } from '../../commands/modules/register';
import { auditRecord } from '../../infra/audit';
import { addCredentialScheme } from '../../infra/http/credentials';
import type { Kernel } from '../../infra/kernel';
import { defineRoutes } from '../../infra/modules';
import { findModule } from '../../commands/modules/lookups';
import {
  activateModule,
  deactivateModule,
  deleteModule,
  installModule,
  retryMigrations,
  updateModule,
} from '../../commands/modules/lifecycle';
import { scopeInstalledSchemas } from '../../commands/modules/migrate';
import { loadModulePermissions } from '../../commands/modules/permissions';
import { trackStoredPermissions } from '../../infra/permissions';
import { callerOf } from '../../infra/http/auth';

/** the platform owner only (platform.*): the registry is the platform's */
/** the platform owner's registry (the platform's own tenant is never suspended): mutations of data all the same */
const owner = { access: 'permission', permission: PLATFORM_WILDCARD, whileSuspended: 'refused' } as const;
const Id = z.string().min(1).max(64).describe('module id or slug');

/** a registry record of the platform tenant (resolves once durable: the answer follows it) */
const registryRecord = (
  kernel: Kernel,
  action: string,
  moduleId: string,
  actorId: string,
  traceId: string,
  meta: Record<string, unknown>,
) =>
  auditRecord(
    {
      action,
      entityType: 'module',
      entityId: moduleId,
      tenantId: registryMeta(actorId, traceId).tenantId,
      actorId,
      meta,
      traceId,
      timestamp: kernel.clock.now().toISOString(),
    },
    kernel.ids.next(),
  );
const audit = (...args: Parameters<typeof registryRecord>) => args[0].audit.record(registryRecord(...args));

/**
 * The module registry (spec 002, data model: "the module registry"; REST under /v1/modules): the
 * platform owner registers a module from its manifest and manages its keys. Installation,
 * activation, updates and migrations belong to the data-model layer. Registration answers the
 * module's first key, shown once, and is not idempotent by key (a stored answer would keep the key).
 */
export default defineRoutes({
  namespace: 'data',
  async start(kernel) {
    addCredentialScheme(kernel, moduleKeyScheme(kernel));
    // the modules' permissions in this process (kept current with the store: infra/permissions.ts),
    // and reconciliations a failed migration run left pending
    trackStoredPermissions(kernel, permissionCatalogEvents);
    await loadModulePermissions(kernel);
    // spec 002: a reconciliation left pending is retried at the next start or health check
    kernel.health.register('module-permissions', () => loadModulePermissions(kernel));
    // schemas an earlier version migrated get keys scoped to the tenant (DESIGN.md mechanism 4), where writes are served
    if (kernel.role === 'all' || kernel.role === 'write-api') await scopeInstalledSchemas(kernel);
  },
  register(app, kernel) {
    const r = app.withTypeProvider<ZodTypeProvider>();

    r.post(
      '/modules',
      {
        config: { ...owner, problems: [409] },
        schema: {
          summary: 'Register a module from its manifest (platform owner); answers its first key',
          body: Manifest,
          response: { 201: ModuleView.extend({ credentials: IssuedKeyView }) },
        },
      },
      async (request, reply) => {
        const actor = callerOf(request).userId;
        const answer = await kernel.commands.run(registryMeta(actor, request.id), async (uow) => {
          const module = await registerModule(kernel, uow, request.body, actor);
          const credentials = await issueKey(kernel, uow.tx, module.id, actor);
          uow.audit(
            registryRecord(kernel, 'module.key.issued', module.id, actor, request.id, { keyId: credentials.keyId }),
          );
          return { ...module, credentials };
        });
        return reply.code(201).send(answer);
      },
    );

    const TenantBody = z.object({ tenantId: z.string().min(1).max(64) }).strict();
    const Installation = z.object({
      moduleId: z.string(),
      slug: z.string(),
      tenantId: z.string(),
      status: z.enum(['active', 'inactive']),
      version: z.string(),
      schemaVersion: z.number().int(),
    });

    r.patch(
      '/modules/:id',
      {
        config: { ...owner, problems: [409] },
        schema: {
          summary: "Publish a new version of the module (migrates its installed tenants' schema)",
          params: z.object({ id: Id }),
          body: Manifest,
          response: { 200: ModuleView },
        },
      },
      async (request) => {
        const view = await updateModule(kernel, callerOf(request).userId, request.id, request.params.id, request.body);
        await audit(kernel, 'module.updated', view.id, callerOf(request).userId, request.id, {
          version: view.version,
        });
        return view;
      },
    );

    r.post(
      '/modules/:id/installations',
      {
        config: { ...owner, problems: [422] },
        schema: {
          summary: 'Install the module for a tenant: runs its pending migrations, then activates it',
          params: z.object({ id: Id }),
          body: TenantBody,
          response: { 201: Installation },
        },
      },
      async (request, reply) =>
        reply
          .code(201)
          .send(
            await installModule(kernel, callerOf(request).userId, request.id, request.params.id, request.body.tenantId),
          ),
    );

    r.post(
      '/modules/:id/activate',
      {
        config: owner,
        schema: {
          summary: 'Activate the module again for a tenant it is installed for',
          params: z.object({ id: Id }),
          body: TenantBody,
          response: { 200: Installation },
        },
      },
      async (request) =>
        activateModule(kernel, callerOf(request).userId, request.id, request.params.id, request.body.tenantId),
    );

    r.post(
      '/modules/:id/deactivate',
      {
        config: owner,
        schema: {
          summary: 'Deactivate the module for a tenant (its tables and rows are kept)',
          params: z.object({ id: Id }),
          body: TenantBody,
          response: { 200: Installation },
        },
      },
      async (request) =>
        deactivateModule(kernel, callerOf(request).userId, request.id, request.params.id, request.body.tenantId),
    );

    r.post(
      '/modules/:id/retry',
      {
        config: owner,
        schema: {
          summary: "Retry the module's failed migration (clears the dirty flag)",
          params: z.object({ id: Id }),
          response: { 200: ModuleView },
        },
      },
      async (request) => retryMigrations(kernel, request.params.id),
    );

    r.delete(
      '/modules/:id',
      {
        config: owner,
        schema: {
          summary: 'Delete the module (soft: its schema stays until `platform modules purge`)',
          params: z.object({ id: Id }),
          response: { 204: z.null() },
        },
      },
      async (request, reply) => {
        await deleteModule(kernel, callerOf(request).userId, request.id, request.params.id);
        return reply.code(204).send(null);
      },
    );

    r.post(
      '/modules/:id/keys',
      {
        config: owner,
        schema: {
          summary: 'Issue another key of the module (rotation: revoke the old one once the module uses the new)',
          params: z.object({ id: Id }),
          response: { 201: IssuedKeyView },
        },
      },
      async (request, reply) => {
        const found = await findModule(kernel.db, request.params.id);
        if (!found) throw moduleErrors.moduleNotFound();
        const issued = await issueKey(kernel, kernel.db, found.id, callerOf(request).userId);
        await audit(kernel, 'module.key.issued', found.id, callerOf(request).userId, request.id, {
          keyId: issued.keyId,
        });
        return reply.code(201).send(issued);
      },
    );

    r.delete(
      '/modules/:id/keys/:keyId',
      {
        config: owner,
        schema: {
          summary: 'Revoke a key of the module',
          params: z.object({ id: Id, keyId: z.uuid() }),
          response: { 204: z.null() },
        },
      },
      async (request, reply) => {
        const found = await findModule(kernel.db, request.params.id);
        if (!found) throw moduleErrors.moduleNotFound();
        await revokeKey(kernel, kernel.db, found.id, request.params.keyId);
        await audit(kernel, 'module.key.revoked', found.id, callerOf(request).userId, request.id, {
          keyId: request.params.keyId,
        });
        return reply.code(204).send(null);
      },
    );
  },
});
