import type { TopicEntry } from '../../domain/events/catalog';
import { catalogOf, lookupTopic, moduleTopicEntry } from '../../domain/events/catalog';
import { eventErrors } from '../../domain/events/errors';
import type { Publisher } from '../../domain/events/publishing';
import type { Manifest } from '../../domain/modules/manifest';
import type { Principal } from '../../infra/http/auth';
import type { Queryable } from '../../infra/postgres/db';
import { allManifests, findModule } from '../modules/lookups';

export type { TopicEntry };

/** every topic, by name */
export const topicCatalog = async (q: Queryable): Promise<TopicEntry[]> => catalogOf(await allManifests(q));

export const findTopic = async (q: Queryable, topic: string): Promise<TopicEntry | null> => {
  const found = lookupTopic(topic);
  if (!found) return null;
  if ('entry' in found) return found.entry;
  const module = await findModule(q, found.moduleSlug);
  return module && module.slug === found.moduleSlug ? moduleTopicEntry(module) : null;
};

export const requireTopic = async (q: Queryable, topic: string): Promise<TopicEntry> => {
  const found = await findTopic(q, topic);
  if (!found) throw eventErrors.topicNotFound(topic);
  return found;
};

/** the module a principal calls as, with its manifest; null for users */
export const moduleOfPrincipal = async (
  q: Queryable,
  principal: Principal,
): Promise<{ id: string; slug: string; manifest: Manifest } | null> => {
  if (!principal.moduleId) return null;
  const found = await findModule(q, principal.moduleId);
  if (!found || found.id !== principal.moduleId)
    throw eventErrors.publishForbidden('The module is no longer registered.');
  return { id: found.id, slug: found.slug, manifest: found.manifest };
};

export const publisherOf = async (q: Queryable, principal: Principal): Promise<Publisher> => {
  const module = await moduleOfPrincipal(q, principal);
  return module ? { kind: 'module', slug: module.slug, publishes: module.manifest.events.publishes } : { kind: 'app' };
};
