import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { Partitioners, type PartitionerArgs } from 'kafkajs';
import { murmur2, partitionForKey, toPositive } from '../../../infra/log/murmur2';

/** kafkajs' own default partitioner, asked where it would put a key on a topic of n partitions. */
const kafkajsPartition = (key: string | Buffer, partitions: number): number => {
  const partitioner = Partitioners.DefaultPartitioner();
  const partitionMetadata = Array.from({ length: partitions }, (_, partitionId) => ({
    partitionId,
    leader: 0,
    partitionErrorCode: 0,
    replicas: [0],
    isr: [0],
  }));
  const args: PartitionerArgs = { topic: 't', partitionMetadata, message: { key, value: null } };
  return partitioner(args);
};

const utf8 = (s: string): Buffer => Buffer.from(s, 'utf8');

describe('murmur2 against the Java client', () => {
  // The first six are Kafka's own UtilsTest#testMurmur2 vectors; the others were computed with
  // org.apache.kafka.common.utils.Utils.murmur2 from kafka-clients 3.9.1 (jshell), UTF-8 encoded.
  const javaVectors: Array<[string, number]> = [
    ['21', -973932308],
    ['foobar', -790332482],
    ['a-little-bit-long-string', -985981536],
    ['a-little-bit-longer-string', -1486304829],
    ['lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8', -58897971],
    ['abc', 479470107],
    ['', 275646681],
    ['a', -1563381124],
    ['ab', 316155434],
    ['wallet-42', 1596641644],
    ['ünïcødé-€', 212670459],
    ['018f3a2e-7b1c-7d4e-9a5b-3c2d1e0f9a8b', 2069888692],
  ];

  it.each(javaVectors)('hashes %j to %i', (key, expected) => {
    expect(murmur2(utf8(key))).toBe(expected);
  });

  // Partitions from Java: Utils.toPositive(Utils.murmur2(bytes)) % n.
  it.each([
    ['foobar', 12, 6],
    ['a-little-bit-longer-string', 12, 11],
    ['lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8', 12, 5],
    ['a', 3, 1],
    ['wallet-42', 3, 1],
    ['ünïcødé-€', 12, 3],
  ] as Array<[string, number, number]>)('places %j on partition %i of %i', (key, partitions, expected) => {
    expect(partitionForKey(key, partitions)).toBe(expected);
  });
});

describe('murmur2 against kafkajs DefaultPartitioner', () => {
  it('agrees on every string key and partition count', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: 'grapheme', maxLength: 80 }),
        fc.integer({ min: 1, max: 256 }),
        (key, partitions) => {
          expect(partitionForKey(key, partitions)).toBe(kafkajsPartition(key, partitions));
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('agrees on arbitrary bytes, covering every tail length', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 67 }), fc.integer({ min: 1, max: 1000 }), (bytes, partitions) => {
        const ours = toPositive(murmur2(bytes)) % partitions;
        expect(ours).toBe(kafkajsPartition(Buffer.from(bytes), partitions));
      }),
      { numRuns: 2000 },
    );
  });

  it('hashes a view into a larger buffer by its own bytes only', () => {
    const backing = utf8('xxfoobaryy');
    expect(murmur2(backing.subarray(2, 8))).toBe(-790332482);
  });
});

describe('toPositive', () => {
  it('clears the sign bit rather than negating', () => {
    expect(toPositive(-1)).toBe(0x7fffffff);
    expect(toPositive(-2147483648)).toBe(0);
    expect(toPositive(5)).toBe(5);
  });
});

describe('partitionForKey', () => {
  it('refuses a partition count that is not a positive integer', () => {
    expect(() => partitionForKey('k', 0)).toThrow(RangeError);
    expect(() => partitionForKey('k', 1.5)).toThrow(RangeError);
  });
});
