/**
 * A consumer-group member of the Postgres log. It polls the partitions it owns (and wakes early on
 * NOTIFY), hands each partition's records to eachBatch in offset order, and commits after eachBatch
 * resolves: at least once, like Kafka with manual commits.
 *
 * Members share partitions through advisory locks (see GroupSession): each takes at most
 * ceil(partitions / live members) per topic and gives surplus back between batches, so a joining
 * member gets work within one rebalance interval and a crashed member's partitions are taken over
 * just as fast.
 */
import type pg from 'pg';
import type { Logger } from './logger';
import type { SubscribeOptions, LogConsumer } from './port';
import { GroupSession } from './pg-log-session';
import { Wakeup, lastOf } from './support';

export interface PgLogConsumerConfig {
  pool: pg.Pool;
  options: SubscribeOptions;
  partitionsOf: (topic: string) => Promise<number>;
  pollIntervalMs: number;
  rebalanceIntervalMs: number;
  logger: Logger;
}

const DEFAULT_MAX_BATCH = 500;
const MAX_BACKOFF_MS = 5_000;

export class PgLogConsumer implements LogConsumer {
  private running = true;
  private session: GroupSession | undefined;
  private lastRebalanceAt = 0;
  private loopDone: Promise<void> = Promise.resolve();
  private stopped: Promise<void> | undefined;
  /** new records or a broken connection */
  private readonly work = new Wakeup();
  /** stop(), which must also cut a retry backoff short */
  private readonly halt = new Wakeup();

  private constructor(private readonly config: PgLogConsumerConfig) {}

  /** Resolves once the member has joined and taken its first partitions, so 'latest' means now. */
  static async start(config: PgLogConsumerConfig): Promise<PgLogConsumer> {
    const subscription = new PgLogConsumer(config);
    const session = await subscription.openSession();
    try {
      await subscription.rebalance(session);
    } catch (error) {
      await subscription.dropSession();
      throw error;
    }
    subscription.loopDone = subscription.loop();
    return subscription;
  }

  stop(): Promise<void> {
    this.stopped ??= this.shutdown();
    return this.stopped;
  }

  private async shutdown(): Promise<void> {
    this.running = false;
    this.work.signal();
    this.halt.signal();
    await this.loopDone;
  }

  private get options(): SubscribeOptions {
    return this.config.options;
  }

  private async loop(): Promise<void> {
    let failures = 0;
    while (this.running) {
      try {
        await this.step();
        failures = 0;
      } catch (error) {
        failures += 1;
        await this.recover(error, failures);
      }
    }
    await this.dropSession();
  }

  private async step(): Promise<void> {
    const session = this.session ?? (await this.openSession());
    session.throwIfFailed();
    if (Date.now() - this.lastRebalanceAt >= this.config.rebalanceIntervalMs) await this.rebalance(session);
    const delivered = await this.deliverOnce(session);
    if (!delivered && this.running) await this.work.wait(this.config.pollIntervalMs);
  }

  /**
   * Nothing was committed for the failed batch, so it is delivered again. The session is dropped
   * so that its partitions can move to a healthy member while this one backs off.
   */
  private async recover(error: unknown, failures: number): Promise<void> {
    const { groupId, topics } = this.options;
    this.config.logger.error(
      { err: error, groupId, topics, failures },
      'log subscription failed; retrying from the committed offsets',
    );
    await this.dropSession();
    if (!this.running) return;
    const backoff = Math.min(MAX_BACKOFF_MS, 100 * 2 ** (failures - 1));
    await this.halt.wait(backoff * (0.5 + Math.random() / 2));
  }

  private async openSession(): Promise<GroupSession> {
    const topics = new Set(this.options.topics);
    this.session = await GroupSession.open(this.config.pool, this.options.groupId, this.options.topics, (topic) => {
      if (topic === undefined || topics.has(topic)) this.work.signal();
    });
    this.lastRebalanceAt = 0;
    return this.session;
  }

  private async dropSession(): Promise<void> {
    const session = this.session;
    this.session = undefined;
    await session?.close();
  }

  private async rebalance(session: GroupSession): Promise<void> {
    for (const topic of this.options.topics) {
      const partitions = await this.config.partitionsOf(topic);
      const members = Math.max(1, await session.liveMembers(topic));
      const share = Math.ceil(partitions / members);
      await this.releaseSurplus(session, topic, share);
      await this.acquireUpTo(session, topic, partitions, share);
    }
    this.lastRebalanceAt = Date.now();
  }

  private async releaseSurplus(session: GroupSession, topic: string, share: number): Promise<void> {
    const surplus = session.ownedPartitions(topic).slice(share);
    for (const partition of surplus) await session.release(topic, partition);
  }

  private async acquireUpTo(session: GroupSession, topic: string, partitions: number, share: number): Promise<void> {
    // Members start their search at different partitions, so joiners rarely race for the same one.
    const first = Number(BigInt.asUintN(32, BigInt(session.memberKey)) % BigInt(partitions));
    for (let i = 0; i < partitions && session.ownedPartitions(topic).length < share; i++) {
      const partition = (first + i) % partitions;
      if (session.position(topic, partition) !== undefined) continue;
      await session.tryOwn(topic, partition, this.options.start ?? 'earliest');
    }
  }

  /** One batch per owned partition that has new records; true when anything was delivered. */
  private async deliverOnce(session: GroupSession): Promise<boolean> {
    let delivered = false;
    for (const head of await session.heads(this.options.topics)) {
      if (!this.running) break;
      const position = session.position(head.topic, head.partition);
      if (position === undefined || position >= head.nextOffset) continue;
      if (await this.deliverBatch(session, head.topic, head.partition, position, head.nextOffset)) delivered = true;
    }
    return delivered;
  }

  private async deliverBatch(
    session: GroupSession,
    topic: string,
    partition: number,
    position: number,
    head: number,
  ): Promise<boolean> {
    const records = await session.fetch(topic, partition, position, this.options.maxBatch ?? DEFAULT_MAX_BATCH);
    if (records.length === 0) {
      // Heads are read before records, so an empty fetch below the head means retention purged it.
      session.skipTo(topic, partition, head);
      return false;
    }
    await this.options.eachBatch(records);
    await session.commit(topic, partition, lastOf(records).offset + 1);
    return true;
  }
}
