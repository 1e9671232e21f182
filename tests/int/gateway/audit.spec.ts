import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AUDIT_TOPIC } from '../../../infra/audit';
import type { LogPort } from '../../../infra/log/port';
import { testToken } from '../../support/auth';
import type { TestPlatform } from '../../support/platform';
import { startTestPlatform, tallyServices } from '../../support/platform';
import { pollUntil } from '../../support/poll';

let platform: TestPlatform;
const headers = {
  authorization: `Bearer ${testToken('tenant-a', 'user-1', ['tally.*'])}`,
  'user-agent': 'audit-test/1',
};

beforeAll(async () => {
  platform = await startTestPlatform({
    services: tallyServices,
    env: { AUDIT_REPLAY_INTERVAL_MS: '300' },
  });
});
afterAll(async () => platform?.close());

const traced = () => {
  const traceId = randomBytes(16).toString('hex');
  return { traceId, traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01` };
};

type AuditEvent = {
  eventId: string;
  type: string;
  source: string;
  tenantId: string;
  traceId: string;
  timestamp: string;
  schemaVersion: string;
  payload: Record<string, unknown>;
};

const findAudit = async (traceId: string): Promise<AuditEvent | null> => {
  const log = platform.kernel.log;
  for (let p = 0; p < (await log.partitionsOf(AUDIT_TOPIC)); p += 1) {
    for (let offset = 0; ;) {
      const records = await log.read(AUDIT_TOPIC, p, offset, 1000);
      if (records.length === 0) break;
      for (const r of records) {
        const event = JSON.parse(r.value) as AuditEvent;
        if (event.traceId === traceId) return event;
      }
      offset = records[records.length - 1]!.offset + 1;
    }
  }
  return null;
};

const eventually = async <T>(probe: () => Promise<T | null | undefined | false>, ms = 10_000): Promise<T> =>
  (await pollUntil(probe, Boolean, { timeoutMs: ms, everyMs: 100 })) as T;

const fallbackRows = async (traceId: string) =>
  (await platform.kernel.db.query("SELECT 1 FROM audit.outbox WHERE record->'headers'->>'traceId' = $1", [traceId]))
    .rowCount ?? 0;

describe('the API-call audit', () => {
  it('records every request as audit.api.called on platform.audit.events', async () => {
    const { traceId, traceparent } = traced();
    const res = await platform.http('/v1/tally/counters?page_size=5', { headers: { ...headers, traceparent } });
    expect(res.status).toBe(200);
    const event = await eventually(() => findAudit(traceId));
    expect(event).toMatchObject({
      type: 'audit.api.called',
      source: 'gateway',
      tenantId: 'tenant-a',
      traceId,
      schemaVersion: '1.0.0',
      payload: {
        actorId: 'user-1',
        method: 'GET',
        route: '/v1/tally/counters',
        status: 200,
        clientAddress: '127.0.0.1',
        userAgent: 'audit-test/1',
      },
    });
    expect(event.payload.latencyMs).toEqual(expect.any(Number));
    expect(event.eventId).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('records refused and anonymous requests too', async () => {
    const { traceId, traceparent } = traced();
    expect((await platform.http('/v1/tally/counters', { headers: { traceparent } })).status).toBe(401);
    const event = await eventually(() => findAudit(traceId));
    expect(event).toMatchObject({
      tenantId: '00000000-0000-0000-0000-000000000000',
      payload: { actorId: null, status: 401, route: '/v1/tally/counters' },
    });
  });

  it('parks records in the fallback table while the log is down and replays them when it is back', async () => {
    const log = platform.kernel.log as { publish: LogPort['publish'] };
    const publish = log.publish;
    log.publish = async (topic, records) => {
      if (topic === AUDIT_TOPIC) throw new Error('log down');
      return publish.call(platform.kernel.log, topic, records);
    };
    const { traceId, traceparent } = traced();
    try {
      const res = await platform.http('/v1/tally/counters', { headers: { ...headers, traceparent } });
      expect(res.status).toBe(200);
      await eventually(async () => (await fallbackRows(traceId)) === 1);
      expect(await findAudit(traceId)).toBeNull();
    } finally {
      log.publish = publish;
    }
    const event = await eventually(() => findAudit(traceId));
    expect(event).toMatchObject({ type: 'audit.api.called', traceId, payload: { status: 200 } });
    await eventually(async () => (await fallbackRows(traceId)) === 0);
  });

  it('never holds a transaction open while a replay waits on a hanging log (it would stall every log reader)', async () => {
    const log = platform.kernel.log as { publish: LogPort['publish'] };
    const publish = log.publish;
    const hanging = { calls: 0 };
    log.publish = (topic, records) => {
      if (topic !== AUDIT_TOPIC) return publish.call(platform.kernel.log, topic, records);
      hanging.calls += 1;
      return new Promise(() => undefined);
    };
    try {
      await platform.kernel.db.query(
        `INSERT INTO audit.outbox (event_id, record) VALUES (gen_random_uuid(), '{"key":"k","value":"{}","headers":{}}')`,
      );
      await eventually(async () => hanging.calls > 0);
      // deliberately let time pass: a transaction left open by the hanging send would now be older than 400 ms
      await new Promise((r) => setTimeout(r, 500));
      const { rows } = await platform.kernel.db.query(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND backend_xid IS NOT NULL AND now() - xact_start > interval '400 milliseconds'`,
      );
      expect(rows[0].n).toBe(0);
    } finally {
      log.publish = publish;
    }
  });

  it('holds requests up at most the publish deadline while the log hangs: their records wait in the outbox', async () => {
    const log = platform.kernel.log as { publish: LogPort['publish'] };
    const publish = log.publish;
    log.publish = (topic, records) =>
      topic === AUDIT_TOPIC ? new Promise(() => undefined) : publish.call(platform.kernel.log, topic, records);
    try {
      const started = Date.now();
      const traces = Array.from({ length: 20 }, traced);
      for (const { traceparent } of traces)
        expect((await platform.http('/v1/tally/counters', { headers: { ...headers, traceparent } })).status).toBe(200);
      // one publish deadline (1 s) for the first answer; the log is then known down for a while — far
      // below the 20 s of one deadline per request, with room for a loaded machine's slow requests
      expect(Date.now() - started).toBeLessThan(1_000 + 9_000);
      for (const { traceId } of traces) expect(await fallbackRows(traceId)).toBe(1);
    } finally {
      log.publish = publish;
    }
  });
});
