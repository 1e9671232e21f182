import { z } from 'zod';
/**
 * What a route's zod schemas cannot say about it, for its OpenAPI operation: a request body that is
 * not JSON (multipart uploads, read as a stream, so no body schema validates them), answers that
 * are not JSON (a file's bytes, a byte range, a redirect) and their headers. A route declares it as
 * `config.openapi`; gateway/openapi.ts merges it into the generated operation.
 */
export type JsonSchema = Record<string, unknown>;

export interface MediaDoc {
  schema: JsonSchema;
  encoding?: Record<string, { contentType?: string }>;
}

export interface HeaderDoc {
  description: string;
  required?: boolean;
  schema: JsonSchema;
}

export interface ResponseDoc {
  description: string;
  headers?: Record<string, HeaderDoc>;
  /** added to the media types the zod schema already documents for that status */
  content?: Record<string, MediaDoc>;
}

export interface OperationDoc {
  requestBody?: { required: boolean; description?: string; content: Record<string, MediaDoc> };
  responses?: Record<number, ResponseDoc>;
}

/** a file's bytes, whatever their type (OpenAPI 3.1: a binary string) */
export const BYTES: JsonSchema = { type: 'string', format: 'binary', contentMediaType: 'application/octet-stream' };

const text = (description: string, extra: JsonSchema = {}): HeaderDoc => ({
  description,
  schema: { type: 'string', ...extra },
});

/** a multipart/form-data request body: its text fields and the part `file` (the bytes) */
export const multipartBody = (
  description: string,
  properties: Record<string, JsonSchema>,
  required: string[],
  additionalProperties: JsonSchema | false = false,
): OperationDoc['requestBody'] => ({
  required: true,
  description,
  content: {
    'multipart/form-data': {
      schema: { type: 'object', properties, required, additionalProperties },
      encoding: { file: { contentType: '*/*' } },
    },
  },
});

/**
 * The answers of a download: 200 the whole file, 206 one byte range (a Range header of one range,
 * `bytes=a-b`, `a-` or `-n`), and the headers both carry; 416 (a problem) has Content-Range
 * `bytes *\/size`. The type is the one detected when the file was stored.
 */
export const downloadAnswers = (what: string): Record<200 | 206 | 416, ResponseDoc> => {
  const headers = {
    'Content-Disposition': text('inline or attachment, with the file name (RFC 6266)'),
    'Accept-Ranges': text('bytes', { const: 'bytes' }),
    ETag: text("the stored object's entity tag"),
    'Content-Length': { description: 'bytes in this answer', schema: { type: 'integer', minimum: 0 } },
  };
  const bytes = { '*/*': { schema: BYTES } };
  return {
    200: { description: `${what}: the whole file, as the type detected at upload`, headers, content: bytes },
    206: {
      description: `${what}: the byte range asked for with Range`,
      headers: {
        ...headers,
        'Content-Range': text('bytes first-last/size', { pattern: '^bytes \\d+-\\d+/\\d+$' }),
      },
      content: bytes,
    },
    416: {
      description: 'Range not satisfiable: it starts beyond the end of the file',
      headers: { 'Content-Range': text('bytes */size', { pattern: '^bytes \\*/\\d+$' }) },
    },
  };
};

/** a 200 whose body is a file (Content-Disposition: attachment), in one of these media types */
export const fileAnswer = (description: string, media: Record<string, JsonSchema>): Record<number, ResponseDoc> => ({
  200: {
    description,
    headers: { 'Content-Disposition': text('attachment, with the file name') },
    content: Object.fromEntries(Object.entries(media).map(([type, schema]) => [type, { schema }])),
  },
});

/** a 302 to a short-lived signed link (GET it without a token) */
export const redirectAnswer = (description: string): Record<number, ResponseDoc> => ({
  302: {
    description,
    headers: { Location: { ...text('the signed link', { format: 'uri-reference' }), required: true } },
  },
});

/** a zod schema as the documents show what a client sends (its input), for a `.meta()` or an OperationDoc */
export const jsonSchemaOf = (schema: z.ZodType, io: 'input' | 'output' = 'input'): JsonSchema => {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as JsonSchema;
  return rest;
};

/** a JSON request body of that schema (an operation whose schema is known only when the document is made) */
export const jsonBody = (schema: z.ZodType): OperationDoc['requestBody'] => ({
  required: true,
  content: { 'application/json': { schema: jsonSchemaOf(schema) } },
});
