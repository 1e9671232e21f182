import type { FastifyReply, FastifyRequest } from 'fastify';
import { commonErrors } from '../../domain/shared/errors';
import type { CausationMeta } from '../eventstore/event-store';
import type { IdempotencyRequest, StoredResponse } from '../eventstore/idempotency';
import { hashRequest, normalizeIdempotencyKey } from '../eventstore/idempotency';
import type { UnitOfWork } from '../eventstore/unit-of-work';
import type { Kernel } from '../kernel';
import { causingSpanId } from '../observability/tracing';
import { stringifyJson } from './json';
import { instanceOf, PROBLEM_CONTENT_TYPE, toProblem } from './problem';

/** UUID v4 or v7, any case, as the spec requires of Idempotency-Key (the OpenAPI documents show this pattern) */
export const IDEMPOTENCY_KEY_PATTERN =
  '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[47][0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}$';
const IDEMPOTENCY_KEY = new RegExp(IDEMPOTENCY_KEY_PATTERN);

/** The envelope of the events a request causes: tenant and actor from the verified token only. */
export const requestMeta = (request: FastifyRequest): CausationMeta => {
  const principal = request.principal;
  if (!principal) throw commonErrors.unauthorized();
  const correlation = request.headers['x-correlation-id'];
  return {
    tenantId: principal.tenantId,
    actorId: principal.impersonatorId ? `${principal.userId} (by ${principal.impersonatorId})` : principal.userId,
    traceId: request.id,
    spanId: causingSpanId(request.id),
    correlationId: typeof correlation === 'string' && correlation.length <= 128 ? correlation : request.id,
    causationId: null,
  };
};

export interface CommandRouteOptions {
  /** HTTP status of a success (200 by default) */
  status?: number;
  /** required: Idempotency-Key must be sent; optional: honoured when sent */
  idempotency?: 'required' | 'optional';
  /**
   * The streams the command locks, for a command that only reads and records events (no writes of
   * its own through uow.tx, no flush): with an Idempotency-Key it then shares a transaction with
   * the commands arriving at the same time (group commit, infra/eventstore/command-batch.ts).
   */
  locks?: string[];
}

const json = (status: number, body: unknown): StoredResponse => ({
  status,
  contentType: 'application/json; charset=utf-8',
  body: Buffer.from(stringifyJson(body)),
});

/**
 * Runs a route's command in one transaction. With an Idempotency-Key the response is stored with
 * the events and replayed byte for byte for the same request; deterministic refusals (4xx other
 * than 409 and 429) are remembered too, so a retry cannot turn a refusal into an execution.
 */
export const executeCommand = async <T>(
  kernel: Kernel,
  request: FastifyRequest,
  reply: FastifyReply,
  options: CommandRouteOptions,
  fn: (uow: UnitOfWork) => Promise<T>,
): Promise<void> => {
  const meta = requestMeta(request);
  const status = options.status ?? 200;
  const header = request.headers['idempotency-key'];
  const key = typeof header === 'string' ? normalizeIdempotencyKey(header) : undefined;
  if (options.idempotency === 'required' && !key) {
    throw commonErrors.validation(
      [{ field: 'Idempotency-Key', message: 'the Idempotency-Key header is required', code: 'REQUIRED' }],
      'The Idempotency-Key header is required.',
    );
  }
  if (key !== undefined && !IDEMPOTENCY_KEY.test(key)) {
    throw commonErrors.validation(
      [{ field: 'Idempotency-Key', message: 'the Idempotency-Key must be a UUID v4 or v7', code: 'INVALID_FORMAT' }],
      'The Idempotency-Key header must be a UUID v4 or v7.',
    );
  }
  if (!key || !options.idempotency) {
    const result = await kernel.commands.run(meta, fn);
    reply.code(status).send(result);
    return;
  }
  const route = request.routeOptions.url ?? request.url;
  const idem: IdempotencyRequest = {
    key,
    requestHash: hashRequest(request.method, `${route} ${JSON.stringify(request.params)}`, request.body ?? null),
    render: (result) => json(status, result),
    renderError: (error) =>
      error.status >= 400 && error.status < 500 && error.status !== 409 && error.status !== 429
        ? {
            status: error.status,
            contentType: PROBLEM_CONTENT_TYPE,
            body: Buffer.from(
              JSON.stringify(toProblem(error, kernel.config.problemsBaseUrl, instanceOf(request), request.id)),
            ),
          }
        : null,
  };
  const stored = options.locks
    ? await kernel.commands.runBatched({ meta, idem, locks: options.locks, fn })
    : await kernel.commands.runIdempotent(meta, idem, fn);
  if (stored.replayed) reply.header('Idempotent-Replayed', 'true');
  reply.code(stored.status).type(stored.contentType).send(stored.body);
};
