import type { TopicEntry } from '../../domain/events/catalog';
import { catalogOf, lookupTopic, moduleTopicEntry } from '../../domain/events/catalog';
import { eventErrors } from '../../domain/events/errors';
import type { Publisher } from '../../domain/events/publishing';
import type { Manifest } from '../../domain/modules/manifest';
import type { ModuleRecord } from '../../domain/modules/views';
import type { Principal } from '../../infra/http/auth';
import type { Queryable } from '../../infra/postgres/db';
import { allManifests, findModule } from '../modules/lookups';

export type { TopicEntry };

/** every topic, by name */
export const topicCatalog = async (q: Queryable): Promise<TopicEntry[]> => catalogOf(await allManifests(q));

/** `known`: a module record the caller already read (a module publishing on its own topic is not read twice) */
export const findTopic = async (
  q: Queryable,
  topic: string,
  known: ModuleRecord | null = null,
): Promise<TopicEntry | null> => {
  const found = lookupTopic(topic);
  if (!found) return null;
  if ('entry' in found) return found.entry;
  const module = known?.slug === found.moduleSlug ? known : await findModule(q, found.moduleSlug);
  return module && module.slug === found.moduleSlug ? moduleTopicEntry(module) : null;
};

export const requireTopic = async (
  q: Queryable,
  topic: string,
  known: ModuleRecord | null = null,
): Promise<TopicEntry> => {
  const found = await findTopic(q, topic, known);
  if (!found) throw eventErrors.topicNotFound(topic);
  return found;
};

const registeredModuleOf = (principal: Principal, found: ModuleRecord | null): ModuleRecord => {
  if (!found || found.id !== principal.moduleId)
    throw eventErrors.publishForbidden('The module is no longer registered.');
  return found;
};

/** the module a principal calls as, with its manifest; null for users */
export const moduleOfPrincipal = async (
  q: Queryable,
  principal: Principal,
): Promise<{ id: string; slug: string; manifest: Manifest } | null> =>
  principal.moduleId ? registeredModuleOf(principal, await findModule(q, principal.moduleId)) : null;

/**
 * What a publish checks against: the topic (404 when there is none) and who publishes (403 when
 * the caller's module is gone). The caller's module is read once, and serves as the topic's owner
 * too when it publishes on its own topic.
 */
export const publishingOf = async (
  q: Queryable,
  principal: Principal,
  topic: string,
): Promise<{ entry: TopicEntry; publisher: Publisher }> => {
  const found = principal.moduleId ? await findModule(q, principal.moduleId) : null;
  const entry = await requireTopic(q, topic, found);
  if (!principal.moduleId) return { entry, publisher: { kind: 'app' } };
  const module = registeredModuleOf(principal, found);
  return { entry, publisher: { kind: 'module', slug: module.slug, publishes: module.manifest.events.publishes } };
};
