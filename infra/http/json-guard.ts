import { Transform } from 'node:stream';
import type { TransformCallback } from 'node:stream';
import type { FieldError } from '../../domain/shared/errors';
import { commonErrors } from '../../domain/shared/errors';
import { RawJson } from '../../domain/shared/json';

/**
 * Bytes and shapes the platform refuses at the edge rather than failing on deep inside: JSON
 * nested deeper than MAX_JSON_DEPTH (a parser, a validator or a walker could run out of stack on
 * it), text PostgreSQL cannot hold (U+0000, lone UTF-16 surrogates).
 */
export const MAX_JSON_DEPTH = 64;

const OPEN = [0x5b, 0x7b]; // [ {
const CLOSE = [0x5d, 0x7d]; // ] }
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * Counts nesting while the body streams in, outside strings, and fails the stream as soon as it
 * passes the bound — before anything is parsed, whatever parser the route uses.
 */
export class JsonDepthGuard extends Transform {
  private depth = 0;
  private inString = false;
  private escaped = false;

  constructor(private readonly maxDepth = MAX_JSON_DEPTH) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    for (let i = 0; i < chunk.length; i += 1) {
      const byte = chunk[i]!;
      if (this.inString) {
        if (this.escaped) this.escaped = false;
        else if (byte === BACKSLASH) this.escaped = true;
        else if (byte === QUOTE) this.inString = false;
      } else if (byte === QUOTE) {
        this.inString = true;
      } else if (OPEN.includes(byte)) {
        this.depth += 1;
        if (this.depth > this.maxDepth) {
          callback(tooDeep(this.maxDepth));
          return;
        }
      } else if (CLOSE.includes(byte)) {
        this.depth -= 1;
      }
    }
    callback(null, chunk);
  }
}

export const tooDeep = (maxDepth = MAX_JSON_DEPTH) =>
  commonErrors.validation(
    [{ field: 'body', message: `JSON nested deeper than ${maxDepth} levels is not accepted`, code: 'TOO_DEEP' }],
    `The JSON body is nested deeper than ${maxDepth} levels.`,
  );

/**
 * The first string (or key) of a parsed JSON value that PostgreSQL could not store — U+0000 or a
 * lone UTF-16 surrogate (JSON's \ud800 escapes decode to one) — as a field error, or null. An
 * explicit stack instead of recursion: the depth is bounded upstream, and a walker must not be
 * the thing that overflows.
 */
export const unstorableText = (value: unknown): FieldError | null => {
  const stack: [unknown, string][] = [[value, '']];
  while (stack.length) {
    const [item, path] = stack.pop()!;
    if (item instanceof RawJson) {
      stack.push([item.value, path]); // JSON kept as sent (money's meta): what it would store
    } else if (typeof item === 'string') {
      const problem = textProblem(item, path);
      if (problem) return problem;
    } else if (Array.isArray(item)) {
      for (let i = item.length - 1; i >= 0; i -= 1) stack.push([item[i], path ? `${path}.${i}` : String(i)]);
    } else if (item && typeof item === 'object' && !Buffer.isBuffer(item)) {
      for (const [key, child] of Object.entries(item)) {
        const at = path ? `${path}.${key}` : key;
        const problem = textProblem(key, at);
        if (problem) return problem;
        stack.push([child, at]);
      }
    }
  }
  return null;
};

const textProblem = (text: string, path: string): FieldError | null => {
  if (text.includes('\0'))
    return {
      field: path || 'body',
      message: 'text must not contain the NUL character (U+0000)',
      code: 'NUL_CHARACTER',
    };
  if (!text.isWellFormed())
    return {
      field: path || 'body',
      message: 'text must be valid Unicode (a lone UTF-16 surrogate is not)',
      code: 'INVALID_UNICODE',
    };
  return null;
};
