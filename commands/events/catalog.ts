import type { TopicEntry } from '../../domain/events/catalog';
import { eventErrors } from '../../domain/events/errors';
import type { Publisher } from '../../domain/events/publishing';
import type { Manifest } from '../../domain/modules/manifest';
import type { ModuleRecord } from '../../domain/modules/views';
import type { Principal } from '../../infra/http/auth';
import type { Queryable } from '../../infra/postgres/db';
import { findTopic } from '../../projections/events/queries';
import { findModule } from '../modules/lookups';

export type { TopicEntry };

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
 * the caller's module is gone). The caller's module is read once (`moduleOf`: a publish reads it from the process's memory, commands/modules/lookups.ts cachedModule), and serves as the topic's owner
 * too when it publishes on its own topic.
 */
export const publishingOf = async (
  q: Queryable,
  principal: Principal,
  topic: string,
  moduleOf: (id: string) => Promise<ModuleRecord | null> = (id) => findModule(q, id),
): Promise<{ entry: TopicEntry; publisher: Publisher }> => {
  const found = principal.moduleId ? await moduleOf(principal.moduleId) : null;
  const entry = await requireTopic(q, topic, found);
  if (!principal.moduleId) return { entry, publisher: { kind: 'app' } };
  const module = registeredModuleOf(principal, found);
  return { entry, publisher: { kind: 'module', slug: module.slug, publishes: module.manifest.events.publishes } };
};
