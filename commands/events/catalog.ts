import { domainOfTopic, topicOfDomain } from '../../domain/modules/manifest';
import type { Manifest } from '../../domain/modules/manifest';
import { eventErrors } from '../../domain/events/errors';
import type { Publisher } from '../../domain/events/publishing';
import { APP_TOPIC, PLATFORM_TOPICS } from '../../domain/events/topics';
import type { Principal } from '../../infra/http/auth';
import type { Queryable } from '../../infra/postgres/db';
import { allManifests, findModule } from '../../projections/modules/queries';

/**
 * The topics of the bus: the platform's (spec 002, topics table), platform.app.events for users'
 * own events, and one per registered module (platform.<slug>.events). Topics are shared by tenants.
 */
export type TopicOwner = { kind: 'platform'; service: string } | { kind: 'app' } | { kind: 'module'; slug: string; moduleId: string };

export interface TopicEntry {
  topic: string;
  domain: string;
  owner: TopicOwner;
  examples: string[];
  /** the schema the module's manifest declares for its topic, until one is registered */
  manifestSchema: { protoDefinition: string; schemaVersion: string; registeredAt: string } | null;
}

const moduleTopic = (m: { id: string; slug: string; manifest: Manifest; registered_at: Date }): TopicEntry => {
  const schema = m.manifest.events.schema;
  return {
    topic: topicOfDomain(m.slug), domain: m.slug, owner: { kind: 'module', slug: m.slug, moduleId: m.id },
    examples: m.manifest.events.publishes.slice(0, 5), manifestSchema: schema ? { ...schema, registeredAt: m.registered_at.toISOString() } : null,
  };
};

const platformEntries: TopicEntry[] = [
  ...PLATFORM_TOPICS.map((t): TopicEntry => ({ topic: t.topic, domain: t.domain, owner: { kind: 'platform', service: t.source }, examples: [...t.examples], manifestSchema: null })),
  { topic: APP_TOPIC.topic, domain: APP_TOPIC.domain, owner: { kind: 'app' }, examples: [...APP_TOPIC.examples], manifestSchema: null },
];

/** every topic, by name */
export const topicCatalog = async (q: Queryable): Promise<TopicEntry[]> =>
  [...platformEntries, ...(await allManifests(q)).map(moduleTopic)].sort((a, b) => a.topic.localeCompare(b.topic));

export const findTopic = async (q: Queryable, topic: string): Promise<TopicEntry | null> => {
  const known = platformEntries.find((t) => t.topic === topic);
  if (known) return known;
  const domain = domainOfTopic(topic);
  if (topic !== topicOfDomain(domain)) return null;
  const found = await findModule(q, domain);
  return found && found.slug === domain ? moduleTopic(found) : null;
};

export const requireTopic = async (q: Queryable, topic: string): Promise<TopicEntry> => {
  const found = await findTopic(q, topic);
  if (!found) throw eventErrors.topicNotFound(topic);
  return found;
};

/** the module a principal calls as, with its manifest; null for users */
export const moduleOfPrincipal = async (q: Queryable, principal: Principal): Promise<{ id: string; slug: string; manifest: Manifest } | null> => {
  if (!principal.moduleId) return null;
  const found = await findModule(q, principal.moduleId);
  if (!found || found.id !== principal.moduleId) throw eventErrors.publishForbidden('The module is no longer registered.');
  return { id: found.id, slug: found.slug, manifest: found.manifest };
};

export const publisherOf = async (q: Queryable, principal: Principal): Promise<Publisher> => {
  const module = await moduleOfPrincipal(q, principal);
  return module ? { kind: 'module', slug: module.slug, publishes: module.manifest.events.publishes } : { kind: 'app' };
};
