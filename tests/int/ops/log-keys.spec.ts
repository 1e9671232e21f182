import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../../infra/observability/logger';
import { duplicateKeys } from '../../support/json-keys';
import type { TestPlatform } from '../../support/platform';
import { startTestPlatform } from '../../support/platform';

/** every JSON line a platform writes while it starts on a fresh database: migrations and projection rebuilds */
const lines: string[] = [];
let platform: TestPlatform;

beforeAll(async () => {
  const logger = createLogger({
    level: 'info',
    destination: {
      write: (chunk: string) => {
        lines.push(...chunk.split('\n').filter(Boolean));
      },
    },
  });
  platform = await startTestPlatform({ logger });
});
afterAll(async () => {
  await platform?.close();
});

describe('the log lines of a start that rebuilds every projection', () => {
  it('name the projection being rebuilt in its own field', () => {
    const rebuilds = lines
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((l) => l.msg === 'projection rebuild');
    expect(rebuilds.map((l) => l.projection)).toEqual(expect.arrayContaining(['tally.counters', 'tally.totals']));
    expect(
      rebuilds.every((l) => l.name === 'platform' && typeof l.applied === 'number' && typeof l.total === 'number'),
    ).toBe(true);
  });

  it('have one key per field, every one of them', () => {
    expect(lines.length).toBeGreaterThan(5);
    expect(lines.map((line) => ({ line, duplicates: duplicateKeys(line) })).filter((l) => l.duplicates.length)).toEqual(
      [],
    );
  });
});
