import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { commonErrors } from '../../../domain/shared/errors';
import { executeCommand } from '../../../infra/http/commands';
import { decodeCursor, pageEnvelope, pageQuery, toPage } from '../../../infra/http/pagination';
import { defineRoutes } from '../../../infra/modules';
import { handleTally } from './commands';
import { callerOf } from '../../../infra/http/auth';

const CounterView = z.object({ id: z.string(), name: z.string(), value: z.number().int() });

export const tallyWrite = defineRoutes({
  namespace: 'data',
  permissions: { 'tally.counters.write': 'create and increment counters', 'tally.counters.read': 'read counters' },
  register(app, kernel) {
    const r = app.withTypeProvider<ZodTypeProvider>();
    r.post(
      '/tally/counters',
      {
        config: { access: 'permission', permission: 'tally.counters.write', whileSuspended: 'refused' },
        schema: {
          body: z.object({ id: z.string().min(1).max(64), name: z.string().min(1).max(100) }),
          response: { 201: CounterView },
        },
      },
      (request, reply) =>
        executeCommand(kernel, request, reply, { status: 201, idempotency: 'optional' }, (uow) =>
          handleTally(uow, { type: 'CreateCounter', counterId: request.body.id, name: request.body.name }),
        ),
    );
    r.post(
      '/tally/counters/:id/increment',
      {
        config: { access: 'permission', permission: 'tally.counters.write', whileSuspended: 'refused' },
        schema: {
          params: z.object({ id: z.string() }),
          body: z.object({ by: z.number().int().min(1).max(1000) }),
          response: { 200: CounterView },
        },
      },
      (request, reply) =>
        executeCommand(kernel, request, reply, { idempotency: 'required' }, (uow) =>
          handleTally(uow, { type: 'Increment', counterId: request.params.id, by: request.body.by }),
        ),
    );
  },
});

export const tallyRead = defineRoutes({
  namespace: 'data',
  register(app: FastifyInstance, kernel) {
    const r = app.withTypeProvider<ZodTypeProvider>();
    r.get(
      '/tally/counters',
      {
        config: { access: 'permission', permission: 'tally.counters.read' },
        schema: { querystring: z.object(pageQuery), response: { 200: pageEnvelope(CounterView) } },
      },
      async (request) => {
        const after = decodeCursor(request.query.page_token, ['id']);
        const { rows } = await kernel.db.query<{ id: string; name: string; value: string }>(
          'SELECT id, name, value FROM rm.tally_counters WHERE tenant_id = $1 AND id > $2 ORDER BY id LIMIT $3',
          [callerOf(request).tenantId, after?.id ?? '', request.query.page_size + 1],
        );
        return toPage(
          rows,
          request.query.page_size,
          (row) => ({ id: row.id, name: row.name, value: Number(row.value) }),
          (row) => ({ id: row.id }),
        );
      },
    );
    r.get(
      '/tally/counters/:id',
      {
        config: { access: 'permission', permission: 'tally.counters.read' },
        schema: { params: z.object({ id: z.string() }), response: { 200: CounterView } },
      },
      async (request) => {
        const { rows } = await kernel.db.query<{ id: string; name: string; value: string }>(
          'SELECT id, name, value FROM rm.tally_counters WHERE tenant_id = $1 AND id = $2',
          [callerOf(request).tenantId, request.params.id],
        );
        const row = rows[0];
        if (!row) throw commonErrors.notFound('The counter does not exist.');
        return { id: row.id, name: row.name, value: Number(row.value) };
      },
    );
  },
});
