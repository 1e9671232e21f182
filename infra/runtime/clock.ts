import { randomFillSync } from 'node:crypto';
import { v7 as uuidv7 } from 'uuid';

/** Time and identity are injected (DESIGN.md mechanism 6), so tests can pin them and deciders never read them. */
export interface Clock {
  now(): Date;
}
export interface IdGenerator {
  /** a UUID v7: time-ordered, so ids sort roughly by creation */
  next(): string;
}

export const systemClock: Clock = { now: () => new Date() };
// randomness drawn 4 KiB at a time: one getrandom call per 256 ids instead of one per id
const pool = Buffer.alloc(4096);
let used = pool.length;
const random16 = (): Uint8Array => {
  if (used === pool.length) {
    randomFillSync(pool);
    used = 0;
  }
  used += 16;
  return pool.subarray(used - 16, used);
};

export const uuidV7Ids: IdGenerator = { next: () => uuidv7({ random: random16() }) };

export const fixedClock = (start: Date): Clock & { advance(ms: number): void; set(d: Date): void } => {
  let t = start.getTime();
  return {
    now: () => new Date(t),
    advance: (ms) => {
      t += ms;
    },
    set: (d) => {
      t = d.getTime();
    },
  };
};
