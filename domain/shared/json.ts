import { z } from 'zod';

/**
 * JSON kept exactly as a client wrote it. JSON.parse turns every number into a double (an integer
 * beyond 2^53 − 1 is rounded, 1.0 becomes 1) and JS objects reorder integer-like keys, so a value
 * that must come back as sent is carried as its text instead: RawJson holds a JSON value's exact
 * text (and, for checks, what JSON.parse makes of it); JsonNumber holds a number literal's text.
 * infra/http/json.ts stringifyJson writes them verbatim into a JSON document.
 */
export class RawJson {
  #value: unknown;
  #parsed: boolean;

  constructor(
    /** the JSON text, exactly as received (or written by us) */
    readonly text: string,
    value?: unknown,
  ) {
    this.#value = value;
    this.#parsed = value !== undefined;
  }

  /** JSON.parse(text), for checks only (numbers may be rounded): parsed when first asked */
  get value(): unknown {
    if (!this.#parsed) {
      this.#value = JSON.parse(this.text);
      this.#parsed = true;
    }
    return this.#value;
  }
}

/**
 * The text of a JSON object with members added after its own (so they win, as in JSON.parse and
 * object spread), the object's own text left as it was.
 */
export const withMembers = (objectText: string, extra: Record<string, unknown>): string => {
  const inner = objectText.trim().slice(1, -1).trim();
  const added = JSON.stringify(extra).slice(1, -1);
  if (!added) return objectText;
  return inner ? `{${inner},${added}}` : `{${added}}`;
};

/** a JSON number literal as written (`100`, `1e3`, `1.0`, `12345678901234567890123`) */
export class JsonNumber {
  constructor(readonly text: string) {}
}

/** the exact text of each member of a JSON object's text (the last one wins, as in JSON.parse); null if the text is not an object */
export const objectMembers = (text: string): Map<string, string> | null => {
  let i = skipSpace(text, 0);
  if (text[i] !== '{') return null;
  const members = new Map<string, string>();
  i = skipSpace(text, i + 1);
  if (text[i] === '}') return members;
  while (i < text.length) {
    const keyEnd = endOfString(text, i);
    const key = JSON.parse(text.slice(i, keyEnd)) as string;
    i = skipSpace(text, keyEnd);
    if (text[i] !== ':') throw new SyntaxError('expected ":" in a JSON object');
    const start = skipSpace(text, i + 1);
    const end = endOfValue(text, start);
    members.set(key, text.slice(start, end));
    i = skipSpace(text, end);
    if (text[i] === '}') return members;
    if (text[i] !== ',') throw new SyntaxError('expected "," in a JSON object');
    i = skipSpace(text, i + 1);
  }
  throw new SyntaxError('unterminated JSON object');
};

const skipSpace = (text: string, from: number): number => {
  let i = from;
  while (i < text.length && (text[i] === ' ' || text[i] === '\n' || text[i] === '\r' || text[i] === '\t')) i += 1;
  return i;
};

/** the index after the JSON string starting at `from` */
const endOfString = (text: string, from: number): number => {
  if (text[from] !== '"') throw new SyntaxError('expected a JSON string');
  let i = from + 1;
  while (i < text.length && text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
  return i + 1;
};

/** the index after the JSON value starting at `from` (the text was validated by JSON.parse first) */
const endOfValue = (text: string, from: number): number => {
  const c = text[from];
  if (c === '"') return endOfString(text, from);
  if (c === '{' || c === '[') {
    let depth = 0;
    let i = from;
    while (i < text.length) {
      const d = text[i]!;
      if (d === '"') {
        i = endOfString(text, i);
        continue;
      }
      if (d === '{' || d === '[') depth += 1;
      else if (d === '}' || d === ']') {
        depth -= 1;
        if (depth === 0) return i + 1;
      }
      i += 1;
    }
    throw new SyntaxError('unterminated JSON value');
  }
  let i = from;
  while (i < text.length && !/[\s,}\]]/.test(text[i]!)) i += 1;
  return i;
};

const isJsonObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof RawJson);

/**
 * A JSON object of any members, kept as it was parsed — a member named __proto__ included, as the
 * own property JSON.parse makes of it (never the object's prototype). zod's records rebuild the
 * object and leave such a key out, silently; this schema passes the object through unchanged.
 */
export const JsonObject = z
  .custom<Record<string, unknown>>(isJsonObject, 'must be a JSON object')
  .meta({ type: 'object', additionalProperties: true });

/** any JSON value (a member that is present), kept as parsed: z.json() rebuilds objects without their __proto__ members */
export const JsonValue = z
  .custom<unknown>((v) => v !== undefined, 'must be a JSON value')
  .meta({ description: 'any JSON value' });
