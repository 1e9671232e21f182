import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuditClient } from '../../support/audit';
import { auditClient } from '../../support/audit';
import type { TestPlatform } from '../../support/platform';
import { startTestPlatform } from '../../support/platform';

/**
 * The audit API's time filters take what PostgreSQL holds (issue 22; README, HTTP conventions): an
 * ISO 8601 timestamp with a UTC offset within ±15:59, years 0001 to 9999 — anything else is 400
 * validation-error on the field, never a failing query (the export's job keeps its range in PostgreSQL).
 */
let platform: TestPlatform;
let client: AuditClient;

beforeAll(async () => {
  platform = await startTestPlatform({ services: ['audit'] });
  client = auditClient(platform.url, `tenant-times-${randomUUID()}`, 'user-times');
});
afterAll(async () => platform?.close());

const YEAR_ZERO = '0000-06-01T00:00:00Z';
const OFFSET_16 = '2026-01-01T00:00:00+16:00';
const OFFSET_MINUS_23 = '2026-01-01T00:00:00-23:59';
const q = encodeURIComponent;

describe('the audit time filters, given values PostgreSQL cannot hold', () => {
  it('refuses them in since and until of the list, the entity history and the export with 400 on the field', async () => {
    const cases: [string, string][] = [];
    for (const bad of [YEAR_ZERO, OFFSET_16, OFFSET_MINUS_23]) {
      cases.push([`/audit?since=${q(bad)}`, 'since'], [`/audit?until=${q(bad)}`, 'until']);
      cases.push([`/audit/entity-history?entityType=invoice&entityId=x&since=${q(bad)}`, 'since']);
      cases.push(
        [`/audit/export?since=${q(bad)}&until=${q('2026-01-01T00:00:00Z')}`, 'since'],
        [`/audit/export?since=${q('2020-01-01T00:00:00Z')}&until=${q(bad)}`, 'until'],
      );
    }
    for (const [path, field] of cases) {
      const res = await client.call('GET', path);
      expect(res.status, `${path}: ${JSON.stringify(res.body)}`).toBe(400);
      expect(res.body.type).toMatch(/\/validation-error$/);
      expect(res.body.errors.map((e: { field: string }) => e.field)).toEqual([field]);
    }
  });

  it('takes the widest values it can hold', async () => {
    const res = await client.call(
      'GET',
      `/audit?since=${q('0001-01-01T00:00:00+00:00')}&until=${q('9999-12-31T23:59:59+15:59')}`,
    );
    expect(res.status, JSON.stringify(res.body)).toBe(200);
  });
});
