import type { LogPort, LogRecord, SubscribeOptions } from './port';

/**
 * One Kafka cluster shared by several platforms (staging beside production, a test run beside
 * another): every topic and consumer group of this platform carries the KAFKA_NAMESPACE prefix on
 * the cluster, while the platform itself keeps using the names of the specification
 * (platform.<domain>.events). Records come back with the names the platform knows.
 */
export const namespacedLog = (log: LogPort, namespace: string): LogPort => {
  if (!namespace) return log;
  const topic = (name: string) => `${namespace}${name}`;
  const local = (record: LogRecord): LogRecord => ({
    ...record,
    topic: record.topic.startsWith(namespace) ? record.topic.slice(namespace.length) : record.topic,
  });
  return {
    kind: log.kind,
    ensureTopics: (topics) => log.ensureTopics(topics.map((t) => ({ ...t, name: topic(t.name) }))),
    partitionsOf: (name) => log.partitionsOf(topic(name)),
    publish: (name, records) => log.publish(topic(name), records),
    subscribe: (options: SubscribeOptions) =>
      log.subscribe({
        ...options,
        groupId: topic(options.groupId),
        topics: options.topics.map(topic),
        eachBatch: (records) => options.eachBatch(records.map(local)),
      }),
    positions: (groupId, name) => log.positions(topic(groupId), topic(name)),
    seek: (groupId, name, target) => log.seek(topic(groupId), topic(name), target),
    offsetsForTime: (name, timestamp) => log.offsetsForTime(topic(name), timestamp),
    read: async (name, partition, fromOffset, maxRecords) =>
      (await log.read(topic(name), partition, fromOffset, maxRecords)).map(local),
    ping: () => log.ping(),
    close: () => log.close(),
  };
};
