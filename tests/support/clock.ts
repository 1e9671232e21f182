import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import type { Clock } from '../../infra/runtime/clock';

/**
 * A clock a test moves: real time plus an offset (tokens and windows expire without sleeping), or
 * a fixed time stepped by hand. In the split topology the platform's roles run in other processes:
 * shareThrough(file) writes every change to a file those processes read on each now()
 * (fileClock), synchronously, so a request sent right after advance() already sees the new time.
 */
export interface TestClock extends Clock {
  advance(ms: number): void;
  /** back to the start: offset 0, or the fixed start time */
  reset(): void;
  /** a fixed clock jumps to this time; an offset clock takes the offset that makes now() this time */
  set(at: Date): void;
  /** mirrors the clock into this file from now on (tests/support/split.ts) */
  shareThrough(path: string): void;
}

/** the file's content: the offset from real time, or a fixed time, in ms */
type Shared = { offsetMs: number } | { fixedAt: number };

const testClock = (fixedStart: number | null): TestClock => {
  let offset = 0;
  let fixed = fixedStart;
  const files: string[] = [];
  const publish = () => {
    const state: Shared = fixed === null ? { offsetMs: offset } : { fixedAt: fixed };
    // rename is atomic: a reader sees the old state or the new one, never half a file
    for (const file of files) {
      writeFileSync(`${file}.next`, JSON.stringify(state));
      renameSync(`${file}.next`, file);
    }
  };
  return {
    now: () => new Date(fixed ?? Date.now() + offset),
    advance: (ms) => {
      if (fixed === null) offset += ms;
      else fixed += ms;
      publish();
    },
    reset: () => {
      offset = 0;
      fixed = fixedStart;
      publish();
    },
    set: (at) => {
      if (fixed === null) offset = at.getTime() - Date.now();
      else fixed = at.getTime();
      publish();
    },
    shareThrough: (path) => {
      files.push(path);
      publish();
    },
  };
};

/** real time plus an offset the test moves forward */
export const offsetClock = (): TestClock => testClock(null);

/** a time that moves only when the test moves it */
export const fixedTestClock = (start: Date): TestClock => testClock(start.getTime());

/** the clock of a role process of the split topology: the state the test's clock shares through the file */
export const fileClock = (path: string): Clock => {
  const read = (): Shared => JSON.parse(readFileSync(path, 'utf8')) as Shared;
  return {
    now: () => {
      const state = read();
      return new Date('fixedAt' in state ? state.fixedAt : Date.now() + state.offsetMs);
    },
  };
};
