import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { moduleErrors } from '../../domain/modules/errors';
import { permissionCatalogEvents } from '../../domain/modules/events';
import { KeyView, ModuleView, moduleView } from '../../domain/modules/views';
import { PLATFORM_WILDCARD } from '../../domain/shared/permissions';
import { decodeCursor, pageEnvelope, pageQuery, toPage } from '../../infra/http/pagination';
import { defineRoutes } from '../../infra/services';
import { trackStoredPermissions } from '../../infra/permissions';
import { findModule, keysOf, listModules, schemaStatusOf } from '../../projections/modules/queries';

const owner = { access: 'permission', permission: PLATFORM_WILDCARD } as const;
const Id = z.string().min(1).max(64).describe('module id or slug');

/** the registry's reads (platform owner) */
export default defineRoutes({
  namespace: 'data',
  async start(kernel) {
    // the modules' permissions in this process's registry, kept current with the store (infra/permissions.ts)
    trackStoredPermissions(kernel, permissionCatalogEvents);
    await kernel.permissions.current();
  },
  register(app, kernel) {
    const r = app.withTypeProvider<ZodTypeProvider>();

    r.get(
      '/modules',
      {
        config: owner,
        schema: {
          summary: 'Registered modules, by slug',
          querystring: z.object(pageQuery),
          response: { 200: pageEnvelope(ModuleView) },
        },
      },
      async (request) => {
        const q = request.query;
        const rows = await listModules(kernel.db, {
          afterSlug: decodeCursor(q.page_token, ['slug'])?.slug,
          limit: q.page_size + 1,
        });
        return toPage(rows, q.page_size, moduleView, (row) => ({ slug: row.slug }));
      },
    );

    r.get(
      '/modules/:id',
      {
        config: owner,
        schema: { summary: 'A registered module', params: z.object({ id: Id }), response: { 200: ModuleView } },
      },
      async (request) => {
        const found = await findModule(kernel.db, request.params.id);
        if (!found) throw moduleErrors.moduleNotFound();
        return moduleView(found, await schemaStatusOf(kernel.db, found.id));
      },
    );

    r.get(
      '/modules/:id/keys',
      {
        config: owner,
        schema: {
          summary: "The module's keys (never their secrets)",
          params: z.object({ id: Id }),
          response: { 200: z.object({ data: z.array(KeyView) }) },
        },
      },
      async (request) => {
        const found = await findModule(kernel.db, request.params.id);
        if (!found) throw moduleErrors.moduleNotFound();
        const keys = await keysOf(kernel.db, found.id);
        return {
          data: keys.map((k) => ({
            keyId: k.id,
            createdAt: k.created_at.toISOString(),
            createdBy: k.created_by,
            revokedAt: k.revoked_at?.toISOString() ?? null,
            lastUsedAt: k.last_used_at?.toISOString() ?? null,
          })),
        };
      },
    );
  },
});
