import type { Tx } from '../../infra/postgres/db';
import type { Kernel } from '../../infra/kernel';
import type { HttpPost } from '../../infra/http/post-client';
import { createHttpPost } from '../../infra/http/post-client';
import type { EventView } from '../../domain/events/views';
import { CacheEpochs, EpochMemo } from '../../infra/cache/epochs';
import type { RegisteredSchemaRow } from '../../domain/events/catalog';
import { BrokerProbe } from './broker';
import type { EventsSettings } from './settings';
import { loadEventsSettings } from './settings';

/** what an in-process handler is told besides the event */
export interface HandlerContext {
  subscriptionId: string;
  tenantId: string;
  consumerGroup: string;
  /** 1 for the first attempt */
  attempt: number;
  /**
   * for a deduplicating subscription, the transaction that records the event as processed: work
   * done through it commits exactly when the event counts as processed (exactly-once effects)
   */
  tx: Tx | null;
}

/** a platform service's handler, consumed in the process that runs the bus workers */
export type InProcessHandler = (event: EventView, context: HandlerContext) => Promise<void>;

export interface EventsContext {
  settings: EventsSettings;
  broker: BrokerProbe;
  /** in-process handlers by handler name */
  handlers: Map<string, InProcessHandler>;
  /** the HTTP client of webhook deliveries, through the kernel's outbound guard */
  post: HttpPost;
  /** the topics' registered schemas a publish checks against, by topic (null: none registered) */
  schemas: EpochMemo<RegisteredSchemaRow | null>;
}

/** a registration bumps it after its commit; another process without the shared cache hears its event on the log */
const topicSchemas = (kernel: Kernel): EpochMemo<RegisteredSchemaRow | null> => {
  const memo = new EpochMemo<RegisteredSchemaRow | null>(
    new CacheEpochs(kernel.engines.cache, 'bus-schemas'),
    'schemas',
  );
  kernel.invalidations.on(['events.schema.registered'], async () => memo.clear());
  return memo;
};

const contexts = new WeakMap<Kernel, EventsContext>();

export const configureEvents = (
  kernel: Kernel,
  overrides: { settings?: Partial<EventsSettings>; post?: HttpPost } = {},
): EventsContext => {
  const previous = contexts.get(kernel);
  const settings = { ...(previous?.settings ?? loadEventsSettings(kernel.config.env)), ...overrides.settings };
  const context: EventsContext = {
    settings,
    broker:
      previous && previous.settings.brokerTimeoutMs === settings.brokerTimeoutMs
        ? previous.broker
        : new BrokerProbe(kernel.log, settings.brokerTimeoutMs),
    handlers: previous?.handlers ?? new Map<string, InProcessHandler>(),
    post: overrides.post ?? previous?.post ?? createHttpPost(kernel.outbound),
    schemas: previous?.schemas ?? topicSchemas(kernel),
  };
  contexts.set(kernel, context);
  return context;
};

export const eventsContext = (kernel: Kernel): EventsContext => contexts.get(kernel) ?? configureEvents(kernel);

/**
 * A platform service's handler for subscriptions with delivery in-process (commands/events/subscriptions.ts
 * createInProcessSubscription): register it in the processes that run the bus workers (a WorkerSet's
 * workers() or a RoutePlugin.start); events are delivered to it with the same order, retries, DLQ and
 * positions as webhooks.
 */
export const registerEventHandler = (kernel: Kernel, handlerName: string, handler: InProcessHandler): void => {
  eventsContext(kernel).handlers.set(handlerName, handler);
};
