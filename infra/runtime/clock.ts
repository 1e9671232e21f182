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
export const uuidV7Ids: IdGenerator = { next: () => uuidv7() };

export const fixedClock = (start: Date): Clock & { advance(ms: number): void; set(d: Date): void } => {
  let t = start.getTime();
  return { now: () => new Date(t), advance: (ms) => { t += ms; }, set: (d) => { t = d.getTime(); } };
};
