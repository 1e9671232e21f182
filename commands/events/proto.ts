import protobuf from 'protobufjs';
import type {
  EnumDescriptor,
  FieldDescriptor,
  MessageDescriptor,
  SchemaDescriptor,
} from '../../domain/events/compatibility';
import { eventErrors } from '../../domain/events/errors';

/**
 * Protobuf definitions of topics, parsed with protobufjs into the plain descriptors the
 * compatibility check compares (domain/events/compatibility.ts). A definition is one file: its own
 * messages and enums plus Google's well-known types (google/protobuf/*.proto); every type it names
 * must resolve, or it is refused (400).
 */
export const parseSchema = (definition: string): SchemaDescriptor => {
  const root = new protobuf.Root();
  let parsed: protobuf.IParserResult;
  try {
    parsed = protobuf.parse(definition, root, { keepCase: true, alternateCommentMode: true });
    for (const file of parsed.imports ?? []) {
      const wellKnown = protobuf.common.get(file);
      if (!wellKnown)
        throw new Error(`import ${file}: only Google's well-known types (google/protobuf/*.proto) can be imported`);
      root.addJSON(wellKnown.nested ?? {});
    }
    root.resolveAll();
  } catch (error) {
    throw eventErrors.invalidSchema((error as Error).message);
  }
  const messages: Record<string, MessageDescriptor> = {};
  const enums: Record<string, EnumDescriptor> = {};
  const walk = (ns: protobuf.NamespaceBase) => {
    for (const nested of ns.nestedArray) {
      const name = nested.fullName.replace(/^\./, '');
      if (name.startsWith('google.protobuf.')) continue;
      if (nested instanceof protobuf.Type) messages[name] = messageOf(nested);
      else if (nested instanceof protobuf.Enum) enums[name] = enumOf(nested);
      if (nested instanceof protobuf.Namespace || nested instanceof protobuf.Type) walk(nested);
    }
  };
  walk(root);
  return { package: parsed.package ?? '', messages, enums };
};

const reservedOf = (reserved: (number[] | string)[] | undefined) => ({
  reservedIds: (reserved ?? [])
    .filter((r): r is number[] => Array.isArray(r))
    .map((r) => [r[0]!, r[1]!] as [number, number]),
  reservedNames: (reserved ?? []).filter((r): r is string => typeof r === 'string'),
});

const messageOf = (type: protobuf.Type): MessageDescriptor => ({
  fields: type.fieldsArray.map((f): FieldDescriptor => {
    // proto3 `optional` is a synthetic oneof: presence only, not a oneof a reader would see
    const synthetic = f.options?.proto3_optional === true;
    return {
      name: f.name,
      id: f.id,
      type: f.resolvedType ? f.resolvedType.fullName.replace(/^\./, '') : f.type,
      cardinality: f.map ? `map<${(f as unknown as protobuf.MapField).keyType}>` : f.repeated ? 'repeated' : 'singular',
      oneof: f.partOf && !synthetic ? f.partOf.name : null,
    };
  }),
  ...reservedOf(type.reserved),
});

const enumOf = (e: protobuf.Enum): EnumDescriptor => ({ values: { ...e.values }, ...reservedOf(e.reserved) });
