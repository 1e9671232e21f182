import { jsonSchemaTransform } from 'fastify-type-provider-zod';
import { PLATFORM_NAMESPACES } from '../infra/http/gateway-ports';
import { IDEMPOTENCY_KEY_PATTERN } from '../infra/http/commands';
import { MAX_PARAM_LENGTH } from '../infra/http/host';
import type { OperationDoc } from '../infra/http/operation-docs';

/**
 * What the OpenAPI documents say beyond the routes' zod schemas, added generically so that every
 * operation of every service is described the same way (docs/decisions.md): the problem answers it
 * can give (from its access, path, body and idempotency, plus what the route declares), the
 * Idempotency-Key header, and free-form query objects as one parameter.
 */

/** RFC 9457 problem details as the platform sends them (infra/http/problem.ts) */
export const PROBLEM_SCHEMA: Record<string, unknown> & { type: 'object' } = {
  type: 'object',
  required: ['type', 'title', 'status', 'detail', 'instance', 'traceId'],
  properties: {
    type: { type: 'string', format: 'uri', description: '{PROBLEMS_BASE_URL}/<suffix>' },
    title: { type: 'string' },
    status: { type: 'integer', minimum: 400, maximum: 599 },
    detail: { type: 'string' },
    instance: { type: 'string', description: 'the request path' },
    traceId: { type: 'string' },
    errors: {
      type: 'array',
      items: {
        type: 'object',
        required: ['field', 'message'],
        properties: { field: { type: 'string' }, message: { type: 'string' }, code: { type: 'string' } },
      },
    },
    retryAfter: { type: 'integer', minimum: 1, description: '429: seconds to wait, as in Retry-After' },
  },
  additionalProperties: true,
};

/** what a route tells the documents about itself (route config), recorded as routes are added */
export interface RouteDoc {
  access: 'public' | 'bearer' | 'permission' | 'admin';
  namespace?: string;
  idempotency?: 'required' | 'optional';
  /** problem statuses the route answers beyond the generic ones */
  problems?: number[];
  hasBody: boolean;
  /** what its zod schemas cannot say: a multipart body, answers that are not JSON (infra/http/operation-docs.ts) */
  openapi?: OperationDoc | (() => OperationDoc);
}

const REASONS: Record<number, string> = {
  400: "Bad request (validation-error and the operation's own suffixes)",
  401: 'Unauthorized: no valid access token',
  402: 'Payment required (plan limit or subscription)',
  403: 'Forbidden: a permission, role or verified email is missing, or the origin is refused',
  404: "Not found (another tenant's resources included), or the module is not installed",
  409: 'Conflict (idempotency-conflict: the key was used with another body, or the request is still running)',
  413: 'Payload too large',
  415: 'Unsupported media type',
  422: 'Unprocessable',
  429: 'Too many requests (Retry-After)',
  500: 'Internal error',
  502: 'Bad gateway',
  503: 'Service unavailable (Retry-After)',
  504: 'Gateway timeout',
};

const problemResponse = (status: number) => ({
  description: REASONS[status] ?? 'Problem',
  ...(status === 429 || status === 503
    ? { headers: { 'Retry-After': { description: 'seconds to wait', schema: { type: 'integer', minimum: 1 } } } }
    : {}),
  content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
});

const SUCCESS: Record<string, string> = {
  200: 'OK',
  201: 'Created',
  202: 'Accepted',
  204: 'No content',
  206: 'Partial content: the byte range asked for',
  207: 'Multi-status: an RFC 9457 problem per failed item',
};

/** the problem statuses an operation can answer */
export const problemStatuses = (route: RouteDoc, path: string, rateLimited: boolean): number[] => {
  const statuses = new Set<number>([400, 500, ...(route.problems ?? [])]);
  if (rateLimited) statuses.add(429);
  if (route.access !== 'public') {
    statuses.add(401);
    statuses.add(403);
  }
  if (path.includes('{') || (route.namespace && !PLATFORM_NAMESPACES.has(route.namespace))) statuses.add(404);
  if (route.idempotency) statuses.add(409);
  if (route.hasBody || (route.openapi && typeof route.openapi !== 'function' && route.openapi.requestBody)) {
    statuses.add(413);
    statuses.add(415);
  }
  return [...statuses].sort((a, b) => a - b);
};

type Media = object;
type Response = { description?: string; headers?: Record<string, unknown>; content?: Record<string, Media> };
type Operation = {
  parameters?: { in: string; name: string; schema?: { type?: unknown; format?: unknown; maxLength?: unknown } }[];
  requestBody?: unknown;
  responses?: Record<string, Response>;
};

/** a route's own documentation merged in: its request body, and per status a description, headers and media types */
const mergeDoc = (op: Operation, doc: OperationDoc): void => {
  if (doc.requestBody) op.requestBody = doc.requestBody;
  const responses = (op.responses ??= {});
  for (const [status, answer] of Object.entries(doc.responses ?? {})) {
    const generated = responses[status] ?? {};
    responses[status] = {
      ...generated,
      description: answer.description,
      ...(answer.headers || generated.headers ? { headers: { ...generated.headers, ...answer.headers } } : {}),
      ...(answer.content || generated.content ? { content: { ...generated.content, ...answer.content } } : {}),
    };
  }
};

const UUID_LENGTH = 36;

/** every path parameter as long as the router lets it be: a UUID 36 characters, anything else at most MAX_PARAM_LENGTH */
const boundPathParameters = (op: Operation): void => {
  for (const p of op.parameters ?? []) {
    if (p.in !== 'path' || !p.schema || p.schema.type !== 'string') continue;
    const most = p.schema.format === 'uuid' ? UUID_LENGTH : MAX_PARAM_LENGTH;
    const declared = typeof p.schema.maxLength === 'number' ? p.schema.maxLength : most;
    p.schema.maxLength = Math.min(declared, most);
  }
};

/** completes one operation of a generated document in place */
export const completeOperation = (op: Operation, path: string, route: RouteDoc, rateLimited: boolean): void => {
  const doc = typeof route.openapi === 'function' ? route.openapi() : route.openapi;
  if (doc) mergeDoc(op, doc);
  boundPathParameters(op);
  const responses = op.responses ?? {};
  for (const [status, response] of Object.entries(responses)) {
    if (response.description === 'Default Response' && SUCCESS[status]) response.description = SUCCESS[status];
  }
  for (const status of problemStatuses(route, path, rateLimited)) {
    const problem = problemResponse(status);
    const declared = responses[String(status)];
    // a route's own headers for a problem status (416's Content-Range) get the Problem body
    responses[String(status)] = !declared ? problem : declared.content ? declared : { ...problem, ...declared };
  }
  op.responses = responses;
  if (
    route.idempotency &&
    !op.parameters?.some((p) => p.in === 'header' && p.name.toLowerCase() === 'idempotency-key')
  ) {
    op.parameters = [
      ...(op.parameters ?? []),
      {
        in: 'header',
        name: 'Idempotency-Key',
        required: route.idempotency === 'required',
        schema: { type: 'string', pattern: IDEMPOTENCY_KEY_PATTERN, minLength: 36, maxLength: 36 },
        description:
          'UUID v4 or v7 (compared case-insensitively); the same key and body answer the stored response (Idempotent-Replayed: true)',
      } as { in: string; name: string },
    ];
  }
};

type JsonSchema = Record<string, unknown>;

/**
 * A query (or header) schema without named properties — a record of free-form parameters — is
 * one object parameter in OpenAPI (style form, explode), not one parameter per JSON Schema keyword.
 */
const freeForm = (schema: JsonSchema | undefined): JsonSchema | undefined => {
  if (!schema || schema.properties || schema.type !== 'object') return schema;
  const { propertyNames: _names, ...rest } = schema;
  return {
    type: 'object',
    properties: { params: { ...rest, description: rest.description ?? 'any query parameters' } },
    style: 'form',
    explode: true,
  };
};

/** the route transform of @fastify/swagger: zod → JSON Schema, then free-form query objects fixed */
export const openApiTransform: typeof jsonSchemaTransform = (input) => {
  const out = jsonSchemaTransform(input);
  const schema = out.schema as JsonSchema | undefined;
  if (schema) {
    schema.querystring = freeForm(schema.querystring as JsonSchema | undefined);
    schema.headers = freeForm(schema.headers as JsonSchema | undefined);
  }
  return out;
};
