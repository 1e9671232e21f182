import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { isTypePattern, topicOf, typeMatches } from '../domain/shared/event';
import type { PlatformEvent } from '../domain/shared/envelope';
import { decodeEvent } from './events/envelope';
import type { LogPort, LogRecord, LogConsumer } from './log/port';
import type { Logger } from './observability/logger';

/** an event as the log carries it: the platform's Event (domain/shared/envelope.ts) */
export type PublishedEvent = PlatformEvent;

export type InvalidationHandler = (event: PublishedEvent) => void | Promise<void>;

const RETRY_MS = [500, 1_000, 2_000, 5_000];

/**
 * Per-process caches (access, plans, limits) are invalidated by the events that change what they
 * hold, delivered through the log to every process (DESIGN.md mechanism 8). A context names the
 * event types and what to drop:
 *
 *   kernel.invalidations.on(['auth.role.changed', ...], (event) => cache.drop(event.payload.userId));
 *
 * Each process reads platform.<domain>.events of those types in a consumer group of its own (so
 * every process gets every event) from the latest offset: an invalidation concerns what a process
 * cached since it started. (A new Kafka group resolves "latest" at its first fetch, so events of its
 * first moments may pass unseen; epochs and TTLs cover them, as they cover a log outage.) Delivery is asynchronous (the relay, then the log): a command that must
 * take effect on the caller's very next request also bumps a shared epoch before it answers
 * (infra/cache/epochs.ts); the log is what reaches caches without one, and the TTL is the safety
 * net. Handlers are best effort: a failing one is logged, never retried, never stops the others.
 */
export class Invalidations {
  private readonly handlers = new Map<string, InvalidationHandler[]>();
  /** handlers of a pattern of types (data.*.*.created: types made at run time) */
  private readonly patterns: { pattern: string; handler: InvalidationHandler }[] = [];
  /** one subscription per topic, started on the first handler for one of its types */
  private readonly topics = new Map<string, Promise<void>>();
  private readonly subscriptions: LogConsumer[] = [];
  private readonly group = `platform.invalidations.${hostname()}.${process.pid}.${randomBytes(4).toString('hex')}`;
  private closed = false;

  constructor(
    private readonly log: LogPort,
    private readonly logger: Logger,
  ) {}

  /** calls handler with every event of these types published from now on, in this process */
  on(types: readonly string[], handler: InvalidationHandler): void {
    for (const type of types)
      if (isTypePattern(type)) this.patterns.push({ pattern: type, handler });
      else this.handlers.set(type, [...(this.handlers.get(type) ?? []), handler]);
    for (const topic of new Set(types.map(topicOf))) {
      if (!this.topics.has(topic)) this.topics.set(topic, this.subscribe(topic));
    }
  }

  /** resolves once every topic a handler needs has a subscription (tests; start-up does not wait for it) */
  async ready(): Promise<void> {
    await Promise.all(this.topics.values());
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.subscriptions.splice(0).map((s) => s.stop().catch(() => undefined)));
  }

  /** subscribes, retrying while the log is unreachable: a process must start even with the log down */
  private async subscribe(topic: string): Promise<void> {
    for (let attempt = 0; !this.closed; attempt += 1) {
      try {
        const subscription = await this.log.subscribe({
          groupId: `${this.group}.${topic}`,
          topics: [topic],
          start: 'latest',
          eachBatch: (records) => this.deliver(records),
        });
        if (this.closed) await subscription.stop();
        else this.subscriptions.push(subscription);
        return;
      } catch (error) {
        if (attempt === 0 || attempt % 10 === 0)
          this.logger.warn(
            { err: error, topic },
            'cache invalidation subscription failed; retrying (caches rely on epochs and TTLs meanwhile)',
          );
        await new Promise((resolve) => setTimeout(resolve, RETRY_MS[Math.min(attempt, RETRY_MS.length - 1)]).unref());
      }
    }
  }

  private async deliver(records: LogRecord[]): Promise<void> {
    for (const record of records) {
      const type = record.headers.type ?? '';
      const handlers = [
        ...(this.handlers.get(type) ?? []),
        ...this.patterns.filter((p) => typeMatches(p.pattern, type)).map((p) => p.handler),
      ];
      if (handlers.length === 0) continue;
      const event = decodeEvent(record.value);
      if (!event) {
        this.logger.warn(
          { topic: record.topic, offset: record.offset },
          'an event on the log is not an Event; no invalidation',
        );
        continue;
      }
      for (const handler of handlers) {
        try {
          await handler(event);
        } catch (error) {
          this.logger.warn(
            { err: error, type: event.type, eventId: event.eventId },
            'cache invalidation handler failed',
          );
        }
      }
    }
  }
}
