import { domainOfTopic, domainOfType } from '../modules/manifest';
import { APP_TOPIC, RESERVED_DOMAINS } from './topics';

/**
 * Who may publish what through the bus (spec 002, Authentication: "a module may publish only event
 * types declared in manifest.events.publishes … auth., money., billing. only by platform services").
 * Platform services publish through their event store, never through this API, so every platform
 * domain is closed to it. A user's token publishes as the source `app`, only app.* types on
 * platform.app.events: it can neither speak for a module nor for the platform.
 */
export type Publisher = { kind: 'module'; slug: string; publishes: readonly string[] } | { kind: 'app' };

export type PublishVerdict = { allowed: true } | { allowed: false; reason: string };

export const publishVerdict = (publisher: Publisher, type: string): PublishVerdict => {
  const domain = domainOfType(type);
  if (RESERVED_DOMAINS.has(domain))
    return { allowed: false, reason: `${domain}.* events are published only by the platform's own services` };
  if (publisher.kind === 'app') {
    return domain === 'app'
      ? { allowed: true }
      : { allowed: false, reason: "a user's token publishes only app.* events (source app)" };
  }
  return publisher.publishes.includes(type)
    ? { allowed: true }
    : {
        allowed: false,
        reason: `${type} is not among the event types the module ${publisher.slug} declares in manifest.events.publishes`,
      };
};

/** the topic of an event type is its domain's: crm.contact.created goes on platform.crm.events */
export const typeFitsTopic = (type: string, topic: string): boolean => domainOfType(type) === domainOfTopic(topic);

/** the source an event carries: the module's slug, or app for users */
export const sourceOf = (publisher: Publisher): string =>
  publisher.kind === 'module' ? publisher.slug : APP_TOPIC.source;
