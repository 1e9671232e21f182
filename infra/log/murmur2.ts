/**
 * Kafka's key placement: partition = toPositive(murmur2(utf8(key))) % partitions, bit for bit as
 * the Java client (org.apache.kafka.common.utils.Utils.murmur2) and kafkajs' DefaultPartitioner
 * compute it. Both log adapters place records with it, so a key lands on the same partition
 * whether Kafka or the Postgres log stored it, and a topic can move between them without
 * reordering any entity's history.
 */

const SEED = 0x9747b28c;
const M = 0x5bd1e995;
const R = 24;

/** Java's murmur2 over bytes, returned as a signed 32-bit integer like Java's int. */
export const murmur2 = (data: Uint8Array): number => {
  const bytes = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  const length = bytes.length;
  let h = SEED ^ length;

  const whole = length - (length % 4);
  for (let i = 0; i < whole; i += 4) {
    // Java assembles k little-endian from unsigned bytes; int overflow wraps, as Math.imul does.
    let k = bytes.readInt32LE(i);
    k = Math.imul(k, M);
    k ^= k >>> R;
    k = Math.imul(k, M);
    h = Math.imul(h, M) ^ k;
  }

  h = mixTail(h, bytes, whole);

  h ^= h >>> 13;
  h = Math.imul(h, M);
  h ^= h >>> 15;
  return h | 0;
};

/** The switch with fall-through in Java's version, spelled out. */
const mixTail = (h: number, bytes: Buffer, from: number): number => {
  const rest = bytes.length - from;
  if (rest === 0) return h;
  if (rest === 3) h ^= bytes.readUInt8(from + 2) << 16;
  if (rest >= 2) h ^= bytes.readUInt8(from + 1) << 8;
  h ^= bytes.readUInt8(from);
  return Math.imul(h, M);
};

/** Kafka's Utils.toPositive: drops the sign bit (not Math.abs, which differs for negatives). */
export const toPositive = (n: number): number => n & 0x7fffffff;

/**
 * The partition Kafka's default partitioner picks for a string key. Keys are encoded as UTF-8, as
 * kafkajs and Java's StringSerializer do; a key holding a lone UTF-16 surrogate would encode
 * differently in the two (U+FFFD vs '?'), which is why keys should be ids, not arbitrary text.
 */
export const partitionForKey = (key: string, partitions: number): number => {
  if (!Number.isInteger(partitions) || partitions < 1)
    throw new RangeError(`partitions must be a positive integer, got ${partitions}`);
  return toPositive(murmur2(Buffer.from(key, 'utf8'))) % partitions;
};
