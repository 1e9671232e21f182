import type { BreakingChangesPolicy } from './compatibility';
import type { Manifest } from '../modules/manifest';
import { domainOfTopic, topicOfDomain } from '../modules/manifest';
import { platformTopicSchema } from './platform-events';
import { APP_TOPIC, PLATFORM_TOPICS } from './topics';

/**
 * The topics of the bus: the platform's (spec 002, topics table), platform.app.events for users'
 * own events, and one per registered module (platform.<slug>.events). Topics are shared by tenants.
 * Both sides build entries from the registry rows they read.
 */
export type TopicOwner =
  { kind: 'platform'; service: string } | { kind: 'app' } | { kind: 'module'; slug: string; moduleId: string };

export interface TopicEntry {
  topic: string;
  domain: string;
  owner: TopicOwner;
  examples: string[];
  /** the schema the module's manifest declares for its topic, until one is registered */
  manifestSchema: { protoDefinition: string; schemaVersion: string; registeredAt: string } | null;
}

export interface ModuleTopicSource {
  id: string;
  slug: string;
  manifest: Manifest;
  registered_at: Date;
}

export const moduleTopicEntry = (m: ModuleTopicSource): TopicEntry => {
  const schema = m.manifest.events.schema;
  return {
    topic: topicOfDomain(m.slug),
    domain: m.slug,
    owner: { kind: 'module', slug: m.slug, moduleId: m.id },
    examples: m.manifest.events.publishes.slice(0, 5),
    manifestSchema: schema ? { ...schema, registeredAt: m.registered_at.toISOString() } : null,
  };
};

export const PLATFORM_TOPIC_ENTRIES: readonly TopicEntry[] = [
  ...PLATFORM_TOPICS.map((t): TopicEntry => ({
    topic: t.topic,
    domain: t.domain,
    owner: { kind: 'platform', service: t.source },
    examples: [...t.examples],
    manifestSchema: null,
  })),
  {
    topic: APP_TOPIC.topic,
    domain: APP_TOPIC.domain,
    owner: { kind: 'app' },
    examples: [...APP_TOPIC.examples],
    manifestSchema: null,
  },
];

/** every topic, by name */
export const catalogOf = (modules: readonly ModuleTopicSource[]): TopicEntry[] =>
  [...PLATFORM_TOPIC_ENTRIES, ...modules.map(moduleTopicEntry)].sort((a, b) => a.topic.localeCompare(b.topic));

/** the platform's entry of a topic, or the module slug a module topic would belong to (null: not a topic name) */
export const lookupTopic = (topic: string): { entry: TopicEntry } | { moduleSlug: string } | null => {
  const known = PLATFORM_TOPIC_ENTRIES.find((t) => t.topic === topic);
  if (known) return { entry: known };
  const domain = domainOfTopic(topic);
  return topic === topicOfDomain(domain) ? { moduleSlug: domain } : null;
};

export interface CurrentSchema {
  topic: string;
  schemaVersion: string;
  protoDefinition: string;
  breakingChangesPolicy: BreakingChangesPolicy;
  /** null: nobody registered one; this is the generic envelope, and the first registration is not checked against it */
  registeredAt: string | null;
}

export interface RegisteredSchemaRow {
  schema_version: string;
  proto_definition: string;
  policy: string;
  registered_at: Date;
}

/**
 * the topic's current schema: the last registered, else the module manifest's, else — a platform
 * topic — the one derived from the payloads its domain publishes (domain/events/platform-events.ts),
 * else the envelope (1.0.0)
 */
export const currentSchemaOf = (entry: TopicEntry, registered: RegisteredSchemaRow | null): CurrentSchema => {
  if (registered) {
    return {
      topic: entry.topic,
      schemaVersion: registered.schema_version,
      protoDefinition: registered.proto_definition,
      breakingChangesPolicy: registered.policy as BreakingChangesPolicy,
      registeredAt: registered.registered_at.toISOString(),
    };
  }
  if (entry.manifestSchema) return { topic: entry.topic, ...entry.manifestSchema, breakingChangesPolicy: 'BACKWARD' };
  if (entry.owner.kind === 'platform')
    return {
      topic: entry.topic,
      schemaVersion: '1.0.0',
      protoDefinition: platformTopicSchema(entry.topic, entry.domain),
      breakingChangesPolicy: 'BACKWARD',
      registeredAt: null,
    };
  return {
    topic: entry.topic,
    schemaVersion: '1.0.0',
    protoDefinition: envelopeSchema(entry.topic),
    breakingChangesPolicy: 'BACKWARD',
    registeredAt: null,
  };
};

/**
 * The schema of a topic nobody has given one: the event envelope with a free payload. Shown by
 * GET /events/topics/:topic/schema until a schema is registered (its registeredAt is null).
 */
export const envelopeSchema = (topic: string): string => `syntax = "proto3";

// ${topic}: every event is this envelope; the payload is free JSON until the topic's owner registers a schema.
package ${topic.replace(/[^a-z0-9_.]/g, '_')};

import "google/protobuf/struct.proto";

message Event {
  string event_id = 1;        // UUID v7, for deduplication
  string type = 2;            // domain.entity.verb
  string source = 3;          // the publishing module or platform service
  string tenant_id = 4;
  google.protobuf.Struct payload = 5;
  string schema_version = 6;  // semver
  string trace_id = 7;
  string timestamp = 8;       // ISO 8601 UTC
  string entity_id = 9;       // the partition key
}
`;
