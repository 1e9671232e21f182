import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { commonErrors } from '../../../domain/shared/errors';
import { setGatewayPorts } from '../../../infra/http/gateway-ports';
import { sendMultiStatus, settleItems } from '../../../infra/http/multi-status';
import { defineRoutes, mergeServiceParts } from '../../../infra/services';

/**
 * What the edge suite runs beside tally, in whichever process serves it (all-in-one or each split
 * role; tests/support/services.ts names it edge-fixture): routes that misbehave on purpose (a
 * response outside its schema, a batch with failing items) and the gateway ports of two tenants'
 * settings, installed by the plugin's start hook as a service would install them.
 */
export const TENANT_ORIGIN = 'https://a.example.org';
/** a tenant with no module installed */
export const SMALL_TENANT = 'tenant-small';

const probe = defineRoutes({
  namespace: 'data',
  start: async (kernel) => {
    setGatewayPorts(kernel, {
      tenantCorsOrigins: async (t) => (t === 'tenant-a' ? [TENANT_ORIGIN] : []),
      originKnownToAnyTenant: async (o) => o === TENANT_ORIGIN,
      installedModules: async (t) => (t === SMALL_TENANT ? new Set<string>() : 'all'),
    });
  },
  register(app, kernel) {
    const r = app.withTypeProvider<ZodTypeProvider>();
    r.get(
      '/edge-probe/bad-shape',
      { schema: { response: { 200: z.object({ n: z.number() }) } } },
      async () => ({ n: 'not a number' }) as never,
    );
    // answers after a pause (at most 2 s): a request still in flight when the server stops
    r.get(
      '/edge-probe/slow',
      { schema: { querystring: z.object({ ms: z.coerce.number().int().min(0).max(2000) }) } },
      async (request) => {
        await new Promise((resolve) => setTimeout(resolve, request.query.ms));
        return { waited: request.query.ms };
      },
    );
    r.post(
      '/edge-probe/batch',
      { config: { whileSuspended: 'refused' }, schema: { body: z.object({ items: z.array(z.number()) }) } },
      async (request, reply) => {
        const outcomes = await settleItems(request.body.items, async (n) => {
          if (n < 0) throw commonErrors.validation([{ field: 'n', message: 'must not be negative', code: 'NEGATIVE' }]);
          if (n === 0) throw new Error('boom');
          return { n };
        });
        return sendMultiStatus(request, reply, kernel.config.problemsBaseUrl, outcomes);
      },
    );
  },
});

export const edgeFixture = mergeServiceParts({ read: [probe] });
