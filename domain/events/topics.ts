import { domainOfTopic, topicOfDomain } from '../modules/manifest';

/**
 * The platform's topics (spec 002, Events): platform.<domain>.events, shared by tenants, keyed by
 * entity id. The service behind each domain is the `source` of the events the platform itself
 * publishes (through the event store and the outbox relay).
 */
export interface PlatformTopic {
  topic: string;
  domain: string;
  source: string;
  examples: readonly string[];
}

const platform = (domain: string, source: string, examples: string[]): PlatformTopic => ({
  topic: topicOfDomain(domain),
  domain,
  source,
  examples,
});

export const PLATFORM_TOPICS: readonly PlatformTopic[] = [
  platform('auth', 'identity', ['auth.user.created', 'auth.user.logged_in', 'auth.role.changed']),
  platform('module', 'modules', [
    'module.registry.registered',
    'module.registry.activated',
    'module.registry.deactivated',
  ]),
  platform('money', 'money', [
    'money.wallet.credited',
    'money.wallet.debited',
    'money.wallet.transfer',
    'money.hold.expired',
  ]),
  platform('files', 'files', ['files.file.uploaded']),
  platform('notify', 'notify', ['notify.notification.sent']),
  platform('audit', 'audit', ['audit.record.created']),
  platform('billing', 'billing', ['billing.plan.changed', 'billing.subscription.changed']),
  platform('data', 'data', [
    'data.<module>.<model>.created',
    'data.<module>.<model>.updated',
    'data.<module>.<model>.deleted',
  ]),
  platform('events', 'events', ['events.subscription.created', 'events.schema.registered']),
];

/** users' tokens publish as the source `app`, on this topic only (docs/decisions.md, Event bus) */
export const APP_SOURCE = 'app';
export const APP_TOPIC: PlatformTopic = {
  topic: topicOfDomain('app'),
  domain: 'app',
  source: APP_SOURCE,
  examples: ['app.order.placed'],
};

/** the spec's reserved prefixes (auth., money., billing.) and every other domain a platform service publishes in */
export const RESERVED_DOMAINS: ReadonlySet<string> = new Set([
  ...PLATFORM_TOPICS.map((t) => t.domain),
  'iam',
  'identity',
  'modules',
  'platform',
  'gateway',
  'system',
]);

export const platformTopicOf = (topic: string): PlatformTopic | undefined =>
  PLATFORM_TOPICS.find((t) => t.topic === topic) ?? (topic === APP_TOPIC.topic ? APP_TOPIC : undefined);

/** who published an event the platform relayed from its event store: the service of its domain */
export const platformSourceOf = (topic: string): string =>
  PLATFORM_TOPICS.find((t) => t.topic === topic)?.source ?? domainOfTopic(topic);

/** hours a topic keeps its records: the audit topic 720 (spec 002, Limits), the others the configured default */
export const retentionHoursOf = (topic: string, defaultHours: number): number =>
  topic === 'platform.audit.events' ? Math.max(720, defaultHours) : defaultHours;
