import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { JsonObject } from '../../domain/shared/json';
import { createRecord, deleteRecord, updateRecord, writableModel } from '../../commands/data/records';
import { executeCommand, requestMeta } from '../../infra/http/commands';
import { createBatcher } from '../../commands/data/create-batch';
import { validateRecord } from '../../domain/data/validation';
import { defineRoutes } from '../../infra/services';
import { callerOf } from '../../infra/http/auth';

const Slug = z
  .string()
  .regex(/^[a-z][a-z0-9_]{1,31}$/)
  .describe("the module's slug");
const Name = z
  .string()
  .regex(/^[a-z][a-z0-9_]{0,62}$/)
  .describe("the model's name");
const Id = z.string().min(1).max(256);
const Record = JsonObject;
/**
 * A record's fields, checked by the handler against the model's columns (unknown fields, types and
 * required ones: 400 with errors[]); the columns are the model's (GET /v1/data/{module}/models/{model}).
 */
const RecordBody = z.unknown().meta({
  type: 'object',
  additionalProperties: true,
  description: "the model's columns by name (GET /v1/data/{module}/models/{model}); id is assigned by the server",
});
/** a record is at most 1 MB (a 400 from the model's validation); the body may be a little larger so that the answer is that 400 */
const BODY_LIMIT = 2 * 1024 * 1024;

/**
 * The generated writes of every autoApi model (spec 002, Data model): each one a domain event
 * data.<module>.<model>.created / updated / deleted with before and after, applied to the module's
 * table in the same transaction. The body is checked against a schema derived from the table; what
 * the table still refuses is a problem (a unique key 409, a reference to no row of the tenant 422,
 * a row still referenced 409, a check 400) and leaves no event.
 */
export default defineRoutes({
  namespace: 'data',
  register(app, kernel) {
    const r = app.withTypeProvider<ZodTypeProvider>();

    r.post(
      '/data/:module/:model',
      {
        bodyLimit: BODY_LIMIT,
        // a counted route: at the plan's records limit the gateway answers 402 plan-limit-exceeded (spec 001)
        config: {
          access: 'bearer',
          idempotency: 'optional',
          counts: 'records',
          problems: [402, 409, 422],
          whileSuspended: 'refused',
        },
        schema: {
          summary: 'Create a record of a generated model',
          params: z.object({ module: Slug, model: Name }),
          body: RecordBody,
          response: { 201: Record },
        },
      },
      async (request, reply) => {
        const { module, model } = request.params;
        const target = await writableModel(kernel, callerOf(request), module, model, 'write');
        // without an Idempotency-Key the create shares a transaction with those arriving at the same time (group commit)
        if (request.headers['idempotency-key'] === undefined) {
          const values = validateRecord(target.model, request.body, 'create');
          const row = await createBatcher(kernel).submit({
            meta: requestMeta(request),
            target,
            body: request.body,
            values,
          });
          return reply.code(201).send(row);
        }
        return executeCommand(kernel, request, reply, { status: 201, idempotency: 'optional' }, (uow) =>
          createRecord(kernel, uow, target, request.body),
        );
      },
    );

    r.patch(
      '/data/:module/:model/:id',
      {
        bodyLimit: BODY_LIMIT,
        config: { access: 'bearer', idempotency: 'optional', problems: [409, 422], whileSuspended: 'refused' },
        schema: {
          summary: 'Change fields of a record',
          params: z.object({ module: Slug, model: Name, id: Id }),
          body: RecordBody,
          response: { 200: Record },
        },
      },
      async (request, reply) => {
        const { module, model, id } = request.params;
        const target = await writableModel(kernel, callerOf(request), module, model, 'write');
        return executeCommand(kernel, request, reply, { idempotency: 'optional' }, (uow) =>
          updateRecord(kernel, uow, target, id, request.body),
        );
      },
    );

    r.delete(
      '/data/:module/:model/:id',
      {
        config: { access: 'bearer', idempotency: 'optional', problems: [409], whileSuspended: 'refused' },
        schema: {
          summary: 'Delete a record',
          params: z.object({ module: Slug, model: Name, id: Id }),
          response: { 204: z.null() },
        },
      },
      async (request, reply) => {
        const { module, model, id } = request.params;
        const target = await writableModel(kernel, callerOf(request), module, model, 'delete');
        return executeCommand(kernel, request, reply, { status: 204, idempotency: 'optional' }, async (uow) => {
          await deleteRecord(kernel, uow, target, id);
          return null;
        });
      },
    );
  },
});
