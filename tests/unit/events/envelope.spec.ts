import { describe, expect, it } from 'vitest';
import { parseSchema } from '../../../commands/events/proto';
import {
  PLATFORM_EVENT_UNIONS,
  platformPayloadsOf,
  platformTopicSchema,
  storedPayloadOf,
  wirePayloadOf,
} from '../../../domain/events/platform-events';
import { PLATFORM_TOPICS } from '../../../domain/events/topics';
import { PLATFORM_TENANT_ID } from '../../../domain/identity/constants';
import { WalletEvent } from '../../../domain/money/events';
import { NO_TENANT, traceIdOf } from '../../../domain/shared/envelope';
import { topicOf } from '../../../domain/shared/event';
import { decodeEvent, encodeEvent, storedEventOf } from '../../../infra/events/envelope';
import { toLogRecord } from '../../../workers/outbox-relay';

const credited = {
  eventId: '0190a0a0-0000-7000-8000-0000000000c1',
  type: 'money.wallet.credited',
  schemaVersion: 1,
  tenantId: 't-1',
  actorId: 'u-1',
  traceId: null,
  causationId: null,
  correlationId: 'corr-1',
  occurredAt: '2026-01-01T00:00:00.000Z',
  streamId: 'money.wallet:t-1:w-1',
  streamVersion: 2,
  position: 7n,
  transactionId: 9n,
  data: {
    transactionId: 'tx-1',
    walletId: 'w-1',
    amount: '9223372036854775807',
    currency: 'USD',
    reason: 'top-up',
    meta: '{"b":1,"a":{"n":12345678901234567890}}',
    idempotencyKey: null,
    entries: [
      { account: 'wallet:w-1:available', amount: '9223372036854775807' },
      { account: 'system:USD', amount: '-9223372036854775807' },
    ],
    balanceAfter: { available: '9223372036854775807', pending: '0', frozen: '0' },
    createdAt: '2026-01-01T00:00:00.000Z',
  },
};

describe('the Event on the log', () => {
  it('is the spec’s eight members; amounts JSON integers digit for digit, meta the object as sent', () => {
    const record = toLogRecord(credited);
    expect(Object.keys(JSON.parse(record.value) as object)).toEqual([
      'eventId',
      'type',
      'source',
      'tenantId',
      'traceId',
      'timestamp',
      'schemaVersion',
      'payload',
    ]);
    expect(record.value).toContain('"amount":9223372036854775807,');
    expect(record.value).toContain('"amount":-9223372036854775807}');
    expect(record.value).toContain('"meta":{"b":1,"a":{"n":12345678901234567890}}');
    expect(record.key).toBe('w-1');
    expect(decodeEvent(record.value)).toMatchObject({
      source: 'money',
      tenantId: 't-1',
      schemaVersion: '1.0.0',
      traceId: 'corr-1',
      timestamp: credited.occurredAt,
    });
    expect(record.headers).toMatchObject({ actorId: 'u-1', streamId: credited.streamId, streamVersion: '2' });
  });

  /** an outgoing record as a consumer reads it back from platform.money.events */
  const onTheLog = (record: ReturnType<typeof toLogRecord>) => ({
    ...record,
    topic: 'platform.money.events',
    partition: 0,
    offset: 3,
    headers: record.headers ?? {},
    timestamp: 0,
  });

  it('carries the span that appended a traced event, so its consumers continue that trace', () => {
    const traced = { ...credited, traceId: 'a'.repeat(32), spanId: 'b'.repeat(16) };
    const record = toLogRecord(traced);
    expect(record.headers).toMatchObject({ traceId: traced.traceId, spanId: traced.spanId });
    const back = storedEventOf(onTheLog(record));
    expect(back).toMatchObject({ traceId: traced.traceId, spanId: traced.spanId });
    // an untraced event names no span
    expect(toLogRecord(credited).headers).not.toHaveProperty('spanId');
  });

  it('reads back into the stored event the projections take (a replay from the log), exactly', () => {
    const record = toLogRecord(credited);
    const logRecord = onTheLog(record);
    const back = storedEventOf(logRecord, storedPayloadOf)!;
    expect(back).toMatchObject({ streamId: credited.streamId, streamVersion: 2, actorId: 'u-1', schemaVersion: 1 });
    const parsed = WalletEvent.parse({ type: back.type, data: back.data });
    expect(parsed).toEqual(WalletEvent.parse({ type: credited.type, data: credited.data }));
    expect(parsed.type === 'money.wallet.credited' && parsed.data.amount).toBe(2n ** 63n - 1n);
    // without the store's form, the wire payload: integers and the meta object
    expect(storedEventOf(logRecord)!.data.meta).toEqual(JSON.parse('{"b":1,"a":{"n":12345678901234567890}}'));
  });

  it('gives an event no request traced a trace id of its own (32 hex digits)', () => {
    expect(traceIdOf({ eventId: credited.eventId })).toMatch(/^[0-9a-f]{32}$/);
    expect(encodeEvent(decodeEvent(toLogRecord({ ...credited, correlationId: null }).value)!)).toContain(
      `"traceId":"${credited.eventId.replace(/-/g, '')}"`,
    );
  });

  it('names the platform pseudo-tenant as identity does', () => expect(NO_TENANT).toBe(PLATFORM_TENANT_ID));

  it('leaves payloads of other domains as they are stored', () =>
    expect(wirePayloadOf('auth.user.created', { userId: 'u', n: '12' })).toEqual({ userId: 'u', n: '12' }));
});

describe('the schema of each platform topic', () => {
  it.each(PLATFORM_TOPICS.map((t) => [t.topic, t.domain]))(
    '%s parses and names only its own event types',
    (topic, domain) => {
      const schema = parseSchema(platformTopicSchema(topic, domain));
      expect(schema.messages[`${topic}.Event`]).toBeDefined();
      for (const p of platformPayloadsOf(domain)) expect(topicOf(p.type)).toBe(topic);
    },
  );

  it('covers every platform domain that has a topic', () =>
    expect(Object.keys(PLATFORM_EVENT_UNIONS).sort()).toEqual(PLATFORM_TOPICS.map((t) => t.domain).sort()));
});
