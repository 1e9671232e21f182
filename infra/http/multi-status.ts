import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { DomainError } from '../../domain/shared/errors';
import { commonErrors, isDomainError } from '../../domain/shared/errors';
import type { Problem } from './problem';
import { instanceOf, toProblem } from './problem';

/** the outcome of one item of a batch or stream */
export type ItemOutcome<T> =
  | { ok: true; status?: number; data: T }
  | { ok: false; /** a DomainError, or whatever else was thrown */ error: unknown };

export interface ItemResult<T> {
  index: number;
  status: number;
  data?: T;
  /** RFC 9457 problem of a failed item; its instance is the request path with #/items/<index> */
  problem?: Problem;
}

export interface MultiStatusBody<T> {
  results: ItemResult<T>[];
  succeeded: number;
  failed: number;
}

/**
 * Runs a batch item by item: each item's outcome, a thrown DomainError becoming that item's
 * problem and anything else an internal-error problem (logged), so one item never fails the batch.
 */
export const settleItems = async <I, T>(
  items: readonly I[],
  fn: (item: I, index: number) => Promise<T>,
): Promise<ItemOutcome<T>[]> => {
  const outcomes: ItemOutcome<T>[] = [];
  for (const [index, item] of items.entries()) {
    try {
      outcomes.push({ ok: true, data: await fn(item, index) });
    } catch (error) {
      outcomes.push({ ok: false, error });
    }
  }
  return outcomes;
};

/**
 * The shared answer of batch and stream endpoints (spec 000 behaviour rule 8): all items
 * succeeded → `successStatus` (200); otherwise 207 Multi-Status with, per item, its status and
 * either its data or an RFC 9457 problem. (All failed is 207 too: each item says why.)
 */
export const sendMultiStatus = <T>(
  request: FastifyRequest,
  reply: FastifyReply,
  problemsBaseUrl: string,
  outcomes: readonly ItemOutcome<T>[],
  successStatus = 200,
): FastifyReply => {
  const base = instanceOf(request);
  const results = outcomes.map((o, index): ItemResult<T> => {
    if (o.ok) return { index, status: o.status ?? successStatus, data: o.data };
    const known = isDomainError(o.error);
    if (!known) request.log.error({ err: o.error, item: index }, 'unexpected error in a batch item');
    const error = known ? (o.error as DomainError) : commonErrors.internal();
    return {
      index,
      status: error.status,
      problem: toProblem(error, problemsBaseUrl, `${base}#/items/${index}`, request.id),
    };
  });
  const failed = results.filter((r) => r.problem).length;
  const body: MultiStatusBody<T> = { results, succeeded: results.length - failed, failed };
  return reply
    .code(failed === 0 ? successStatus : 207)
    .type('application/json; charset=utf-8')
    .send(JSON.stringify(body, bigintReplacerSafe));
};

const bigintReplacerSafe = (_key: string, value: unknown) => (typeof value === 'bigint' ? value.toString() : value);

/** an item's RFC 9457 problem, as the documents show it */
const ItemProblem = z.looseObject({
  type: z.string(),
  title: z.string(),
  status: z.number().int(),
  detail: z.string(),
  instance: z.string().describe('the request path and #/items/<index>'),
  traceId: z.string(),
  errors: z.array(z.object({ field: z.string(), message: z.string(), code: z.string().optional() })).optional(),
});

/** the answer of sendMultiStatus with items of that schema, for a route's response schema (the answer is written as text) */
export const multiStatusSchema = <T extends z.ZodType>(item: T) =>
  z.object({
    results: z.array(
      z.object({
        index: z.number().int().min(0),
        status: z.number().int(),
        data: item.optional().describe('a succeeded item'),
        problem: ItemProblem.optional().describe('a failed item'),
      }),
    ),
    succeeded: z.number().int().min(0),
    failed: z.number().int().min(0),
  });
