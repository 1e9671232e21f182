import { it } from 'vitest';
import { SPLIT } from './topology';

/**
 * A test that cannot run against separate processes, with the reason (it replaces a port of the
 * running process with a function, say): skipped in the split run, where the report counts it.
 */
export const allInOneOnly = (reason: string) => {
  if (!reason) throw new Error('say why the test runs in one process only');
  return it.skipIf(SPLIT);
};
