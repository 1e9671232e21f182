/**
 * The rules every LogPort adapter keeps, run against a real engine by each adapter's spec.
 * Each test makes its own topics and groups, so the tests neither share nor order state.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { partitionForKey } from '../../../infra/log/murmur2';
import type { LogPort, LogRecord } from '../../../infra/log/port';
import {
  RETENTION_WEEK,
  event,
  expectedPlacement,
  id,
  join,
  logEnds,
  newTopic,
  oneEachFor,
  readAll,
  seqOf,
  sleep,
  uniqueName,
  waitFor,
} from './harness';

export const describeLogContract = (name: string, makeLog: () => Promise<LogPort>): void => {
  describe(`the ${name} log`, () => {
    let log: LogPort;

    beforeAll(async () => {
      log = await makeLog();
    });
    afterAll(async () => {
      await log?.close();
    });

    describe('a reachable engine', () => {
      it('answers a ping', async () => {
        await expect(log.ping()).resolves.toBeUndefined();
      });
    });

    describe('a topic that does not exist yet', () => {
      it('is created by ensureTopics with its partitions, and a second call changes nothing', async () => {
        const topic = uniqueName('ensure');
        await log.ensureTopics([{ name: topic, partitions: 3, retentionMs: RETENTION_WEEK }]);
        await log.ensureTopics([{ name: topic, partitions: 5, retentionMs: RETENTION_WEEK }]);

        expect(await log.partitionsOf(topic)).toBe(3);
      });

      it('has no partitions to report', async () => {
        await expect(log.partitionsOf(uniqueName('missing'))).rejects.toThrow();
      });

      it('cannot be created with an invalid spec', async () => {
        await expect(log.ensureTopics([{ name: 'has space', partitions: 1, retentionMs: 1000 }])).rejects.toThrow(
          /topic name/,
        );
        await expect(
          log.ensureTopics([{ name: uniqueName('zero'), partitions: 0, retentionMs: 1000 }]),
        ).rejects.toThrow(/partitions/);
      });
    });

    describe('a topic with records published', () => {
      it('reads them back from an offset with key, value, headers and timestamp as published', async () => {
        const topic = await newTopic(log, 3);
        const base = 1_700_000_000_123;
        await log.publish(
          topic,
          [0, 1, 2, 3, 4].map((seq) => event('order-1', seq, { headers: { trace: `t${seq}` }, timestamp: base + seq })),
        );
        const partition = partitionForKey('order-1', 3);

        const records = await log.read(topic, partition, 2, 10);

        expect(records).toEqual(
          [2, 3, 4].map((seq) => ({
            topic,
            partition,
            offset: seq,
            key: 'order-1',
            value: JSON.stringify({ key: 'order-1', seq }),
            headers: { trace: `t${seq}` },
            timestamp: base + seq,
          })),
        );
      });

      it('keeps the value byte for byte', async () => {
        const topic = await newTopic(log, 1);
        const value = '{ "b":1,  "a":[1.50, "é\\u00e9"] }';
        await log.publish(topic, [{ key: 'k', value }]);

        expect((await log.read(topic, 0, 0, 1))[0]?.value).toBe(value);
      });

      it('reads at most maxRecords, and nothing past the log end', async () => {
        const topic = await newTopic(log, 1);
        await log.publish(
          topic,
          [0, 1, 2, 3].map((seq) => event('k', seq)),
        );

        expect((await log.read(topic, 0, 0, 2)).map((r) => r.offset)).toEqual([0, 1]);
        expect(await log.read(topic, 0, 4, 10)).toEqual([]);
      });

      it('stamps records published without a timestamp with the time of publishing', async () => {
        const topic = await newTopic(log, 1);
        const before = Date.now();
        await log.publish(topic, [event('k', 0)]);
        const after = Date.now();

        const [record] = await log.read(topic, 0, 0, 1);
        expect(record?.timestamp).toBeGreaterThanOrEqual(before);
        expect(record?.timestamp).toBeLessThanOrEqual(after);
      });

      it('places every key on partition murmur2(key) mod partitions', async () => {
        const topic = await newTopic(log, 4);
        const published = oneEachFor(60);
        await log.publish(topic, published);

        const stored = await readAll(log, topic);
        expect(stored).toHaveLength(60);
        for (const r of stored) expect(r.partition, r.key).toBe(partitionForKey(r.key, 4));
        expect(new Set(stored.map((r) => r.partition)).size).toBe(4);
      });

      it("places 'foobar' on partition 6 of 12, as Kafka's Java client does", async () => {
        const topic = await newTopic(log, 12);
        await log.publish(topic, [event('foobar', 0)]);

        expect((await log.read(topic, 6, 0, 10)).map((r) => r.key)).toEqual(['foobar']);
      });

      it("keeps each key's records in publish order, on dense offsets", async () => {
        const topic = await newTopic(log, 3);
        const keys = Array.from({ length: 8 }, (_, i) => `account-${i}`);
        for (let seq = 0; seq < 15; seq++)
          await log.publish(
            topic,
            keys.map((k) => event(k, seq)),
          );
        await log.publish(
          topic,
          keys.flatMap((k) => [15, 16, 17].map((seq) => event(k, seq))),
        );

        const stored = await readAll(log, topic);
        for (let p = 0; p < 3; p++) {
          const offsets = stored.filter((r) => r.partition === p).map((r) => r.offset);
          expect(offsets).toEqual(offsets.map((_, i) => i));
        }
        for (const k of keys)
          expect(stored.filter((r) => r.key === k).map(seqOf)).toEqual(Array.from({ length: 18 }, (_, i) => i));
      });

      it('keeps offsets dense and each publisher in order when publishers race on one partition', async () => {
        const topic = await newTopic(log, 1);
        await Promise.all(
          Array.from({ length: 6 }, (_, w) =>
            log.publish(
              topic,
              Array.from({ length: 25 }, (_, seq) => event(`writer-${w}`, seq)),
            ),
          ),
        );

        const stored = await log.read(topic, 0, 0, 1000);
        expect(stored.map((r) => r.offset)).toEqual(Array.from({ length: 150 }, (_, i) => i));
        for (let w = 0; w < 6; w++)
          expect(stored.filter((r) => r.key === `writer-${w}`).map(seqOf)).toEqual(
            Array.from({ length: 25 }, (_, i) => i),
          );
      });
    });

    describe('a consumer group on a topic with history', () => {
      it('receives every record once and commits the offset after the last', async () => {
        const topic = await newTopic(log, 3);
        const published = oneEachFor(30);
        await log.publish(topic, published);
        const group = uniqueName('group');

        const member = await join(log, group, [topic]);
        await member.until(30);
        await member.stop();

        expect(member.ids().sort()).toEqual(expectedPlacement(published, 3).sort());
        const ends = logEnds(published, 3);
        expect(await log.positions(group, topic)).toEqual(
          ends.map((end, partition) => ({ partition, currentOffset: end, logEndOffset: end, lag: 0 })),
        );
      });

      it('hands over batches of one partition, in offset order, no larger than maxBatch', async () => {
        const topic = await newTopic(log, 3);
        await log.publish(
          topic,
          Array.from({ length: 40 }, (_, i) => event(`k-${i % 5}`, i)),
        );

        const member = await join(log, uniqueName('group'), [topic], { maxBatch: 4 });
        await member.until(40);
        await member.stop();

        for (const batch of member.batches) {
          expect(batch.length).toBeGreaterThan(0);
          expect(batch.length).toBeLessThanOrEqual(4);
          expect(new Set(batch.map((r) => r.partition)).size).toBe(1);
          expect(batch.map((r) => r.offset)).toEqual(batch.map((_, i) => batch[0]!.offset + i));
        }
        for (let p = 0; p < 3; p++) {
          const offsets = member.records.filter((r) => r.partition === p).map((r) => r.offset);
          expect(offsets).toEqual(offsets.map((_, i) => i));
        }
      });

      it('resumes after the last committed offset when it subscribes again', async () => {
        const topic = await newTopic(log, 3);
        const first = oneEachFor(30);
        await log.publish(topic, first);
        const group = uniqueName('group');
        const earlier = await join(log, group, [topic]);
        await earlier.until(30);
        await earlier.stop();

        const second = Array.from({ length: 12 }, (_, i) => event(`entity-${i}`, 1));
        await log.publish(topic, second);
        const later = await join(log, group, [topic]);
        await later.until(12);
        await later.stop();

        // Records of a partition arrive in offset order, so a redelivered one would precede the new ones.
        expect(later.ids().sort()).toEqual(expectedPlacement(second, 3, logEnds(first, 3)).sort());
      });

      it('commits the batch in flight when stopped, so the next member neither repeats nor loses it', async () => {
        const topic = await newTopic(log, 1);
        await log.publish(
          topic,
          Array.from({ length: 20 }, (_, seq) => event('k', seq)),
        );
        const group = uniqueName('group');
        let inFlight = false;
        const first = await join(log, group, [topic], {
          maxBatch: 5,
          onBatch: async () => {
            inFlight = true;
            // deliberately slow: the batch is still being handled when the member leaves
            await sleep(400);
          },
        });
        await waitFor(() => inFlight, 'a batch in flight');

        await first.stop();
        const handled = first.records.length;
        expect(handled).toBeGreaterThanOrEqual(5);
        expect((await log.positions(group, topic))[0]?.currentOffset).toBe(handled);

        const next = await join(log, group, [topic]);
        await next.until(20 - handled);
        await next.stop();
        expect([...first.records, ...next.records].map((r) => r.offset)).toEqual(
          Array.from({ length: 20 }, (_, i) => i),
        );
      });

      it('redelivers a batch whose handler failed, and moves on once it succeeds', async () => {
        const topic = await newTopic(log, 1);
        await log.publish(
          topic,
          Array.from({ length: 6 }, (_, seq) => event('k', seq)),
        );
        const group = uniqueName('group');
        const attempts: number[][] = [];

        const member = await join(log, group, [topic], {
          onBatch: async (batch) => {
            attempts.push(batch.map((r) => r.offset));
            if (attempts.length === 1) throw new Error('handler failed on purpose');
          },
        });
        await member.until(6);
        await member.stop();

        expect(attempts[1]?.[0]).toBe(attempts[0]?.[0]);
        expect(member.records.map((r) => r.offset)).toEqual([0, 1, 2, 3, 4, 5]);
        expect((await log.positions(group, topic))[0]).toMatchObject({ currentOffset: 6, lag: 0 });
      });

      it('never skips an offset while publishers race on the partition it reads', async () => {
        const topic = await newTopic(log, 1);
        const member = await join(log, uniqueName('group'), [topic]);

        await Promise.all(
          Array.from({ length: 5 }, (_, w) =>
            (async () => {
              for (let seq = 0; seq < 8; seq++)
                await log.publish(topic, [event(`w${w}`, seq * 2), event(`w${w}`, seq * 2 + 1)]);
            })(),
          ),
        );
        await member.until(80);
        await member.stop();

        expect(member.records.map((r) => r.offset)).toEqual(Array.from({ length: 80 }, (_, i) => i));
      });
    });

    describe('two consumer groups on one topic', () => {
      it('each receives every record and keeps its own offsets', async () => {
        const topic = await newTopic(log, 2);
        const published = oneEachFor(10);
        await log.publish(topic, published);
        const [groupA, groupB] = [uniqueName('a'), uniqueName('b')];

        const a = await join(log, groupA, [topic]);
        await a.until(10);
        await a.stop();
        const b = await join(log, groupB, [topic]);
        await b.until(10);
        await b.stop();
        await log.publish(topic, published);
        const aAgain = await join(log, groupA, [topic]);
        await aAgain.until(10);
        await aAgain.stop();

        expect(b.ids().sort()).toEqual(a.ids().sort());
        const lagOf = async (group: string) => (await log.positions(group, topic)).reduce((sum, p) => sum + p.lag, 0);
        expect(await lagOf(groupA)).toBe(0);
        expect(await lagOf(groupB)).toBe(10);
      });
    });

    describe('a group that has not consumed', () => {
      it('is at offset 0 with the whole log as lag', async () => {
        const topic = await newTopic(log, 3);
        const published = oneEachFor(20);
        await log.publish(topic, published);

        const positions = await log.positions(uniqueName('idle'), topic);

        expect(positions).toEqual(
          logEnds(published, 3).map((end, partition) => ({ partition, currentOffset: 0, logEndOffset: end, lag: end })),
        );
      });
    });

    describe('a group that consumed everything', () => {
      const consumedTopic = async (partitions: number, count: number, timestampOf?: (i: number) => number) => {
        const topic = await newTopic(log, partitions);
        const published = Array.from({ length: count }, (_, i) =>
          event(`entity-${i}`, i, timestampOf ? { timestamp: timestampOf(i) } : {}),
        );
        // One publish per record, so each record's timestamp follows the one before it in its partition.
        for (const record of published) await log.publish(topic, [record]);
        const group = uniqueName('group');
        const member = await join(log, group, [topic]);
        await member.until(count);
        await member.stop();
        return { topic, group, published };
      };

      it('gets every partition re-delivered from an offset it seeks to', async () => {
        const { topic, group, published } = await consumedTopic(3, 30);

        await log.seek(group, topic, { offset: 2 });
        const again = await join(log, group, [topic]);
        const ends = logEnds(published, 3);
        const expected = ends.flatMap((end, p) =>
          Array.from({ length: Math.max(0, end - 2) }, (_, i) => `${p}:${i + 2}`),
        );
        await again.until(expected.length);
        await again.stop();

        expect(again.ids().sort()).toEqual(expected.sort());
      });

      it('gets the records at or after a time re-delivered when it seeks to that time', async () => {
        const t0 = Date.now() - 60_000;
        const { topic, group, published } = await consumedTopic(3, 12, (i) => t0 + i * 1000);
        const placed = expectedPlacement(published, 3);
        const expected = placed.filter((_, i) => i >= 7);
        const firstExpected = (p: number) =>
          Math.min(
            ...placed.filter((at, i) => i >= 7 && at.startsWith(`${p}:`)).map((at) => Number(at.split(':')[1])),
            logEnds(published, 3)[p]!,
          );

        await log.seek(group, topic, { timestamp: t0 + 6_500 });
        expect((await log.positions(group, topic)).map((p) => p.currentOffset)).toEqual([0, 1, 2].map(firstExpected));
        const again = await join(log, group, [topic]);
        await again.until(expected.length);
        await again.stop();

        expect(again.ids().sort()).toEqual(expected.sort());
      });

      it('moves only the partitions it names when it seeks per partition', async () => {
        const { topic, group, published } = await consumedTopic(3, 20);
        const ends = logEnds(published, 3);

        await log.seek(group, topic, { offsets: { 1: 1 } });

        expect((await log.positions(group, topic)).map((p) => p.currentOffset)).toEqual([ends[0], 1, ends[2]]);
      });

      it('seeks no further than the log end', async () => {
        const { topic, group, published } = await consumedTopic(2, 6);

        await log.seek(group, topic, { offset: 1_000 });

        expect((await log.positions(group, topic)).map((p) => p.currentOffset)).toEqual(logEnds(published, 2));
      });

      it('cannot be moved while one of its members runs', async () => {
        const { topic, group } = await consumedTopic(2, 4);
        const running = await join(log, group, [topic]);

        await expect(log.seek(group, topic, { offset: 0 })).rejects.toThrow();
        await running.stop();
        await expect(log.seek(group, topic, { offset: 0 })).resolves.toBeUndefined();
      });
    });

    describe('a topic with timestamped records', () => {
      it('answers per partition the first offset at or after a time, or the log end when there is none', async () => {
        const topic = await newTopic(log, 1);
        const t0 = Date.now() - 60_000;
        await log.publish(
          topic,
          [0, 1, 2, 3].map((i) => event('k', i, { timestamp: t0 + i * 1000 })),
        );

        expect(await log.offsetsForTime(topic, t0 - 1)).toEqual({ 0: 0 });
        expect(await log.offsetsForTime(topic, t0 + 1000)).toEqual({ 0: 1 });
        expect(await log.offsetsForTime(topic, t0 + 1500)).toEqual({ 0: 2 });
        expect(await log.offsetsForTime(topic, t0 + 10_000)).toEqual({ 0: 4 });
        expect(await log.offsetsForTime(topic, Number.MAX_SAFE_INTEGER)).toEqual({ 0: 4 });
      });
    });

    describe('a new group starting at latest', () => {
      it('skips the history and receives what is published after it joined', async () => {
        const topic = await newTopic(log, 2);
        const history = oneEachFor(10);
        await log.publish(topic, history);
        const ends = logEnds(history, 2);

        const member = await join(log, uniqueName('latest'), [topic], { start: 'latest' });
        // The first fetch may still be resolving "latest"; keep publishing until something arrives.
        for (let round = 1; member.records.length === 0 && round < 100; round++) {
          await log.publish(
            topic,
            oneEachFor(4).map((r) => ({ ...r, value: JSON.stringify({ round }) })),
          );
          // deliberately spaced rounds, so rebalances fall between them
          await sleep(100);
        }
        await member.stop();

        expect(member.records.length).toBeGreaterThan(0);
        for (const r of member.records) expect(r.offset, id(r)).toBeGreaterThanOrEqual(ends[r.partition]!);
      });
    });

    describe('two members of one group', () => {
      it('never work on the same partition at once, and together receive every record', async () => {
        const topic = await newTopic(log, 4);
        const published = oneEachFor(60);
        const group = uniqueName('group');
        const busy = new Set<number>();
        const overlaps: number[] = [];
        const guard = async (batch: LogRecord[]) => {
          const partition = batch[0]!.partition;
          if (busy.has(partition)) overlaps.push(partition);
          busy.add(partition);
          // deliberately hold the partition a moment: an overlapping batch would be seen
          await sleep(15);
          busy.delete(partition);
        };

        const a = await join(log, group, [topic], { maxBatch: 3, onBatch: guard });
        const b = await join(log, group, [topic], { maxBatch: 3, onBatch: guard });
        for (const part of [published.slice(0, 30), published.slice(30)]) {
          await log.publish(topic, part);
          // deliberately let the members take batches of each part while the group settles
          await sleep(200);
        }
        const seen = () => new Set([...a.ids(), ...b.ids()]);
        await waitFor(() => seen().size === 60, 'every record in either member');
        await Promise.all([a.stop(), b.stop()]);

        expect(overlaps).toEqual([]);
        expect([...seen()].sort()).toEqual(expectedPlacement(published, 4).sort());
      });
    });
  });
};
