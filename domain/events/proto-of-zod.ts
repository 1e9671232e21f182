import { z } from 'zod';

/**
 * Protobuf (proto3) text of event payloads, derived from the zod schemas a domain writes its events
 * with — never a hand-written copy, so the schema a topic serves is the payloads it carries. The
 * zod schema goes through zod's JSON Schema (input side: what is stored and sent), then each JSON
 * Schema node becomes a proto3 type: strings, booleans, integers (int64), numbers (double), enums
 * and constants (string, values in a comment), arrays (repeated), objects with properties (a nested
 * message), free objects (google.protobuf.Struct), anything else (google.protobuf.Value); a
 * nullable member is `optional`. `integers` names the zod schemas written as JSON integers on the
 * log (money's Cents), `objects` those written as JSON objects (meta kept as its text).
 */
export interface PayloadSchema {
  type: string;
  data: z.ZodType;
}

export interface ProtoOptions {
  integers: readonly z.ZodType[];
  objects: readonly z.ZodType[];
}

type Json = Record<string, unknown>;

/** money.wallet.credited → MoneyWalletCredited: the payload message of an event type */
export const messageNameOf = (type: string): string =>
  type
    .split(/[^A-Za-z0-9]+/)
    .map(pascal)
    .join('');
const pascal = (s: string): string => (s ? s[0]!.toUpperCase() + s.slice(1) : s);
const snake = (s: string): string =>
  s
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/[^A-Za-z0-9_]/g, '_')
    .toLowerCase();

const jsonSchemaOf = (schema: z.ZodType, options: ProtoOptions): Json =>
  z.toJSONSchema(schema, {
    io: 'input',
    unrepresentable: 'any',
    override: (ctx) => {
      const replace = (by: Json) => {
        for (const k of Object.keys(ctx.jsonSchema)) delete (ctx.jsonSchema as Json)[k];
        Object.assign(ctx.jsonSchema, by);
      };
      if (options.integers.includes(ctx.zodSchema as unknown as z.ZodType))
        replace({ type: 'integer', format: 'int64' });
      else if (options.objects.includes(ctx.zodSchema as unknown as z.ZodType)) replace({ type: 'object' });
    },
  });

const nonNull = (types: unknown[]): unknown[] => types.filter((t) => t !== 'null');

/** the proto type of a JSON Schema node, and the nested messages it needs */
const typeOf = (node: Json, name: string, nested: string[]): { type: string; optional: boolean; repeated: boolean } => {
  const variants = (node.anyOf ?? node.oneOf) as Json[] | undefined;
  if (variants) {
    const real = variants.filter((v) => v.type !== 'null');
    const optional = real.length < variants.length;
    if (real.length === 1) return { ...typeOf(real[0]!, name, nested), optional };
    const kinds = new Set(real.map((v) => v.type));
    if (kinds.size === 1 && kinds.has('string')) return { type: 'string', optional, repeated: false };
    return { type: 'google.protobuf.Value', optional: false, repeated: false };
  }
  let type = node.type;
  let optional = false;
  if (Array.isArray(type)) {
    const real = nonNull(type);
    optional = real.length < type.length;
    type = real.length === 1 ? real[0] : undefined;
  }
  if (node.const !== undefined || node.enum !== undefined) return { type: 'string', optional, repeated: false };
  switch (type) {
    case 'string':
      return { type: 'string', optional, repeated: false };
    case 'boolean':
      return { type: 'bool', optional, repeated: false };
    case 'integer':
      return { type: 'int64', optional, repeated: false };
    case 'number':
      return { type: 'double', optional, repeated: false };
    case 'array': {
      const item = typeOf((node.items as Json | undefined) ?? {}, name, nested);
      return { type: item.repeated ? 'google.protobuf.ListValue' : item.type, optional: false, repeated: true };
    }
    case 'object': {
      const properties = node.properties as Record<string, Json> | undefined;
      if (!properties || Object.keys(properties).length === 0)
        return { type: 'google.protobuf.Struct', optional: false, repeated: false };
      nested.push(messageOf(name, properties, node.required as string[] | undefined));
      return { type: name, optional, repeated: false };
    }
    default:
      return { type: 'google.protobuf.Value', optional: false, repeated: false };
  }
};

const indent = (text: string): string =>
  text
    .split('\n')
    .map((l) => (l ? `  ${l}` : l))
    .join('\n');

const messageOf = (
  name: string,
  properties: Record<string, Json>,
  required: string[] = [],
  comment?: string,
): string => {
  const nested: string[] = [];
  const fields = Object.entries(properties).map(([member, node], i) => {
    const t = typeOf(
      node,
      pascal(member.replace(/[^A-Za-z0-9]+(.)?/g, (_m, c: string | undefined) => (c ?? '').toUpperCase())),
      nested,
    );
    const label = t.repeated ? 'repeated ' : t.optional || !required.includes(member) ? 'optional ' : '';
    const values = (node.enum as unknown[] | undefined) ?? (node.const !== undefined ? [node.const] : undefined);
    const note = values ? `  // ${values.map(String).join(' | ')}` : '';
    return `${label}${t.type} ${snake(member)} = ${i + 1};${note}`;
  });
  const body = [...nested, ...fields].join('\n');
  return `${comment ? `// ${comment}\n` : ''}message ${name} {\n${body ? `${indent(body)}\n` : ''}}`;
};

/** the message of one event type's payload, named after the type */
export const payloadMessageOf = (p: PayloadSchema, options: ProtoOptions): string => {
  const json = jsonSchemaOf(p.data, options);
  const properties = (json.properties as Record<string, Json> | undefined) ?? {};
  return messageOf(messageNameOf(p.type), properties, json.required as string[] | undefined, `payload of ${p.type}`);
};

/** the event types of a union of {type, data} schemas (the domains' event unions) */
export const payloadsOf = (union: z.ZodDiscriminatedUnion): PayloadSchema[] =>
  union.options.map((o) => {
    const shape = (o as z.ZodObject).shape as { type: z.ZodLiteral<string>; data: z.ZodType };
    return { type: shape.type.value, data: shape.data };
  });
