import { Kafka, logLevel } from 'kafkajs';
import { requireEnv } from '../support/env';

/**
 * Global set-up of the serial project: removes the topics and consumer groups the earlier projects
 * left on the test Kafka (every int and split platform has a namespace of its own, thousands of
 * partitions in a full run). The serial suites stop and start that broker, and a broker loads
 * every partition it holds before it answers: about 35 s with a run's leftovers, a few seconds
 * without. Nothing else uses Kafka while serial runs (the project runs alone, after int and split;
 * e2e beside it uses embedded engines only).
 */
export default async function cleanKafka(): Promise<void> {
  const admin = new Kafka({
    clientId: 'serial-cleanup',
    brokers: requireEnv('TEST_KAFKA_BROKERS').split(','),
    logLevel: logLevel.NOTHING,
  }).admin();
  await admin.connect();
  try {
    const topics = (await admin.listTopics()).filter((t) => !t.startsWith('__'));
    for (let i = 0; i < topics.length; i += 500)
      await admin.deleteTopics({ topics: topics.slice(i, i + 500), timeout: 60_000 });
    const groups = (await admin.listGroups()).groups.map((g) => g.groupId);
    for (let i = 0; i < groups.length; i += 500)
      await admin.deleteGroups(groups.slice(i, i + 500)).catch(() => undefined);
    process.stdout.write(
      `[serial] removed ${topics.length} topics and ${groups.length} consumer groups left by earlier projects\n`,
    );
  } finally {
    await admin.disconnect();
  }
}
