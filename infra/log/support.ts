/** Small pieces both log adapters share, so they validate and clamp the same way. */
import type { SubscribeOptions, TopicSpec } from './port';

// Kafka's own rule; the Postgres log applies it too so a topic can move between the two.
const TOPIC_NAME = /^[a-zA-Z0-9._-]{1,249}$/;

export const validateTopicSpecs = (topics: TopicSpec[]): void => {
  for (const t of topics) {
    if (!TOPIC_NAME.test(t.name) || t.name === '.' || t.name === '..')
      throw new Error(`invalid topic name ${JSON.stringify(t.name)}`);
    if (!Number.isInteger(t.partitions) || t.partitions < 1)
      throw new Error(`topic ${t.name}: partitions must be a positive integer`);
    if (!Number.isInteger(t.retentionMs) || t.retentionMs < 1)
      throw new Error(`topic ${t.name}: retentionMs must be a positive integer`);
  }
};

export const validateSubscribeOptions = (options: SubscribeOptions): void => {
  if (!options.groupId) throw new Error('subscribe needs a groupId');
  if (options.topics.length === 0) throw new Error('subscribe needs at least one topic');
  if (options.maxBatch !== undefined && (!Number.isInteger(options.maxBatch) || options.maxBatch < 1))
    throw new Error('maxBatch must be a positive integer');
};

/**
 * Committed offsets are kept inside [log start, log end]. Kafka would answer an offset outside it
 * with OFFSET_OUT_OF_RANGE and silently reset the group to earliest or latest; clamping at seek
 * time makes both adapters behave the same, predictable way.
 */
export const clampOffset = (offset: number, logStart: number, logEnd: number): number =>
  Math.min(Math.max(offset, logStart), logEnd);

export const chunk = <T>(items: readonly T[], size: number): T[][] => {
  const chunks: T[][] = [];
  for (let i = 0; i < items.length; i += size) chunks.push(items.slice(i, i + size));
  return chunks;
};

export const lastOf = <T>(items: readonly T[]): T => {
  const last = items[items.length - 1];
  if (last === undefined) throw new Error('empty list has no last element');
  return last;
};

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Rejects when the work takes longer than ms; the work itself is not cancelled. */
export const withTimeout = async <T>(work: Promise<T>, ms: number, what: string): Promise<T> => {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} timed out after ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
};

/**
 * A sleep that a signal cuts short. A signal that arrives while nobody waits is remembered, so a
 * notification landing between "found nothing" and "start waiting" is not lost.
 */
export class Wakeup {
  private pending = false;
  private wakeWaiter: (() => void) | undefined;

  signal(): void {
    this.pending = true;
    this.wakeWaiter?.();
  }

  async wait(ms: number): Promise<void> {
    if (!this.pending) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, ms);
        this.wakeWaiter = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wakeWaiter = undefined;
    }
    this.pending = false;
  }
}

/** The consumers an adapter runs, so that close() can stop those the callers did not. */
export class LogConsumerSet<S extends { stop(): Promise<void> }> {
  private readonly running = new Set<S>();

  /** tracks a consumer and hands out the LogConsumer that stops and forgets it */
  add(subscription: S): { stop(): Promise<void> } {
    this.running.add(subscription);
    return {
      stop: async () => {
        await subscription.stop();
        this.running.delete(subscription);
      },
    };
  }

  async stopAll(): Promise<void> {
    await Promise.allSettled([...this.running].map((s) => s.stop()));
    this.running.clear();
  }
}
