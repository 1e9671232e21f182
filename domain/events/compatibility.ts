/**
 * Backward compatibility of a topic's Protobuf schema (spec 002, Versioning: "backward-compatibility
 * checks run on every change"). Schemas are compared as plain descriptors (commands/events/proto.ts
 * parses them with protobufjs): readers built on the old schema must read what writers of the new
 * one produce, in the binary wire format and in JSON (the bus carries JSON), so:
 *
 * - the package stays; no message or enum disappears;
 * - a field keeps its number, name, type and cardinality (repeated, map) and its oneof; proto3
 *   `optional` may come or go (presence only);
 * - a removed field's number and name are reserved, and no new field takes a reserved number or name;
 * - an enum value keeps its number and name; a removed value's number is reserved;
 * - adding messages, enums, fields and enum values is always fine.
 */
export interface FieldDescriptor {
  name: string;
  id: number;
  type: string;
  /** repeated, map<keyType,…> or singular */
  cardinality: 'singular' | 'repeated' | `map<${string}>`;
  oneof: string | null;
}

export interface MessageDescriptor {
  fields: FieldDescriptor[];
  reservedIds: [number, number][];
  reservedNames: string[];
}

export interface EnumDescriptor {
  values: Record<string, number>;
  reservedIds: [number, number][];
  reservedNames: string[];
}

export interface SchemaDescriptor {
  package: string;
  /** by fully qualified name */
  messages: Record<string, MessageDescriptor>;
  enums: Record<string, EnumDescriptor>;
}

export interface Breaking {
  field: string;
  message: string;
  code: string;
}

const reserved = (ranges: [number, number][], id: number): boolean =>
  ranges.some(([from, to]) => id >= from && id <= to);

const checkMessage = (name: string, before: MessageDescriptor, after: MessageDescriptor): Breaking[] => {
  const problems: Breaking[] = [];
  const byId = new Map(after.fields.map((f) => [f.id, f]));
  for (const old of before.fields) {
    const now = byId.get(old.id);
    const at = `${name}.${old.name}`;
    if (!now) {
      if (!reserved(after.reservedIds, old.id) || !after.reservedNames.includes(old.name)) {
        problems.push({
          field: at,
          message: `field ${old.id} was removed without reserving its number and name`,
          code: 'FIELD_REMOVED',
        });
      }
      continue;
    }
    if (now.name !== old.name)
      problems.push({
        field: at,
        message: `field ${old.id} was renamed to ${now.name} (JSON readers use the name)`,
        code: 'FIELD_RENAMED',
      });
    if (now.type !== old.type)
      problems.push({
        field: at,
        message: `field ${old.id} changed type from ${old.type} to ${now.type}`,
        code: 'FIELD_TYPE_CHANGED',
      });
    if (now.cardinality !== old.cardinality)
      problems.push({
        field: at,
        message: `field ${old.id} changed from ${old.cardinality} to ${now.cardinality}`,
        code: 'FIELD_CARDINALITY_CHANGED',
      });
    if (now.oneof !== old.oneof)
      problems.push({
        field: at,
        message: `field ${old.id} moved ${now.oneof ? `into oneof ${now.oneof}` : `out of oneof ${old.oneof}`}`,
        code: 'FIELD_ONEOF_CHANGED',
      });
  }
  const oldIds = new Set(before.fields.map((f) => f.id));
  const oldNames = new Set(before.fields.map((f) => f.name));
  for (const field of after.fields) {
    if (oldIds.has(field.id)) continue;
    if (reserved(before.reservedIds, field.id))
      problems.push({
        field: `${name}.${field.name}`,
        message: `field number ${field.id} was reserved`,
        code: 'RESERVED_NUMBER_REUSED',
      });
    if (before.reservedNames.includes(field.name) || oldNames.has(field.name)) {
      problems.push({
        field: `${name}.${field.name}`,
        message: `the name ${field.name} was reserved or belonged to another field`,
        code: 'RESERVED_NAME_REUSED',
      });
    }
  }
  return problems;
};

const checkEnum = (name: string, before: EnumDescriptor, after: EnumDescriptor): Breaking[] => {
  const problems: Breaking[] = [];
  const nameOfNumber = new Map(Object.entries(after.values).map(([n, v]) => [v, n]));
  for (const [value, number] of Object.entries(before.values)) {
    const at = `${name}.${value}`;
    if (after.values[value] === undefined) {
      if (!reserved(after.reservedIds, number))
        problems.push({
          field: at,
          message: `enum value ${number} was removed without reserving its number`,
          code: 'ENUM_VALUE_REMOVED',
        });
      else if (nameOfNumber.has(number))
        problems.push({
          field: at,
          message: `enum value ${number} was renamed to ${nameOfNumber.get(number)}`,
          code: 'ENUM_VALUE_RENAMED',
        });
    } else if (after.values[value] !== number) {
      problems.push({
        field: at,
        message: `enum value ${value} changed number from ${number} to ${after.values[value]}`,
        code: 'ENUM_VALUE_NUMBER_CHANGED',
      });
    }
  }
  return problems;
};

/** the breaking changes from before to after; [] when after is backward compatible */
export const breakingChanges = (before: SchemaDescriptor, after: SchemaDescriptor): Breaking[] => {
  const problems: Breaking[] = [];
  if (before.package !== after.package)
    problems.push({
      field: 'package',
      message: `the package changed from ${before.package || '(none)'} to ${after.package || '(none)'}`,
      code: 'PACKAGE_CHANGED',
    });
  for (const [name, message] of Object.entries(before.messages)) {
    const next = after.messages[name];
    if (!next) problems.push({ field: name, message: `message ${name} was removed`, code: 'MESSAGE_REMOVED' });
    else problems.push(...checkMessage(name, message, next));
  }
  for (const [name, e] of Object.entries(before.enums)) {
    const next = after.enums[name];
    if (!next) problems.push({ field: name, message: `enum ${name} was removed`, code: 'ENUM_REMOVED' });
    else problems.push(...checkEnum(name, e, next));
  }
  return problems;
};

/**
 * What a topic's breakingChangesPolicy means: BACKWARD checks a new schema against the current
 * version, BACKWARD_TRANSITIVE against every version the topic had. Both refuse breaking changes.
 */
export const BREAKING_CHANGES_POLICIES = ['BACKWARD', 'BACKWARD_TRANSITIVE'] as const;
export type BreakingChangesPolicy = (typeof BREAKING_CHANGES_POLICIES)[number];
