import type { FastifyReply, FastifyRequest } from 'fastify';
import type { DomainError, FieldError } from '../../domain/shared/errors';

/** RFC 9457 problem details as the platform sends them. */
export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  instance: string;
  traceId: string;
  errors?: FieldError[];
  [extension: string]: unknown;
}

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/** the request path without its query string: the problem's instance */
export const instanceOf = (request: FastifyRequest): string => request.url.split('?')[0] ?? request.url;

export const toProblem = (error: DomainError, problemsBaseUrl: string, instance: string, traceId: string): Problem => ({
  ...(error.extensions ?? {}),
  type: `${problemsBaseUrl}/${error.suffix}`,
  title: error.title,
  status: error.status,
  detail: error.detail,
  instance,
  traceId,
  ...(error.errors ? { errors: error.errors } : {}),
});

export const sendProblem = (
  reply: FastifyReply,
  problem: Problem,
  headers: Record<string, string> = {},
): FastifyReply => {
  for (const [name, value] of Object.entries(headers)) reply.header(name, value);
  return reply.code(problem.status).type(PROBLEM_CONTENT_TYPE).send(JSON.stringify(problem));
};
