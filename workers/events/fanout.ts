import type { Kernel } from '../../infra/kernel';
import type { Worker } from '../../infra/services';
import type { LogConsumer } from '../../infra/log/port';
import { eventsContext } from '../../commands/events/context';
import { copyRecords, fanoutTopics } from '../../commands/events/fanout';
import { topicSpecOf } from '../../commands/events/subscriptions';
import type { Loop } from '../loop';
import { startLoop } from '../loop';

const REFRESH_MS = 1000;
export const fanoutGroupOf = (topic: string): string => `events.fanout.${topic}`;

/**
 * The fan-out (docs/decisions.md, Event bus): every topic some subscription reads is consumed by
 * the consumer group events.fanout.<topic> and copied per tenant into events.records, where each
 * subscription reads its tenant's events only. A topic's first start seeks the group to the log
 * offsets its subscriptions start from (under a lock, so two workers never both start it), later
 * starts resume from the group's committed offsets. Looks for new topics every second.
 */
export const fanoutWorker = (kernel: Kernel): Worker => {
  const running = new Map<string, LogConsumer>();
  let loop: Loop | null = null;

  const initialize = async (topic: string, since: Date): Promise<void> => {
    const client = await kernel.db.connect();
    try {
      await client.query('SELECT pg_advisory_lock(hashtextextended($1, 0))', [`events.fanout-init:${topic}`]);
      try {
        const { rowCount } = await client.query('SELECT 1 FROM events.fanout_topics WHERE topic = $1', [topic]);
        if (rowCount) return;
        await kernel.log.ensureTopics([topicSpecOf(kernel, topic)]);
        // the earliest log offset any of its subscriptions starts from, per partition
        const { rows } = await client.query<{ partition: number; start: string }>(
          'SELECT partition, min(min_log_offset) AS start FROM events.cursors WHERE topic = $1 GROUP BY partition',
          [topic],
        );
        if (rows.length)
          await kernel.log.seek(fanoutGroupOf(topic), topic, {
            offsets: Object.fromEntries(rows.map((r) => [r.partition, Number(r.start)])),
          });
        await client.query(
          'INSERT INTO events.fanout_topics (topic, indexed_since) VALUES ($1, $2) ON CONFLICT DO NOTHING',
          [topic, since],
        );
      } finally {
        await client.query('SELECT pg_advisory_unlock(hashtextextended($1, 0))', [`events.fanout-init:${topic}`]);
      }
    } finally {
      client.release();
    }
  };

  const refresh = async (): Promise<boolean> => {
    const topics = await fanoutTopics(kernel.db);
    for (const { topic, since, started } of topics) {
      if (running.has(topic)) continue;
      if (!started) await initialize(topic, since);
      const subscription = await kernel.log.subscribe({
        groupId: fanoutGroupOf(topic),
        topics: [topic],
        start: 'earliest',
        maxBatch: 1000,
        eachBatch: async (records) => {
          await copyRecords(kernel.db, topic, records);
        },
      });
      running.set(topic, subscription);
      kernel.logger.info({ topic }, 'event bus fan-out started');
    }
    return false;
  };

  return {
    name: 'events.fanout',
    start() {
      eventsContext(kernel);
      loop = startLoop(refresh, {
        idleMs: REFRESH_MS,
        onError: (error, failures) => {
          if (failures === 1 || failures % 30 === 0)
            kernel.logger.warn({ err: error, failures }, 'event bus fan-out cannot start a topic; retrying');
        },
      });
    },
    async stop() {
      await loop?.stop();
      await Promise.all([...running.values()].map((s) => s.stop()));
      running.clear();
    },
  };
};
