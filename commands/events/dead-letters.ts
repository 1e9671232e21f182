import { domainOfTopic, dlqTopicOfDomain } from '../../domain/modules/manifest';
import type { EventView } from '../../domain/events/views';
import type { Tx } from '../../infra/postgres/db';
import type { BusSubscriptionRow } from './lookups';
import { busDeadLetters } from '../../infra/observability/metrics';

export interface DeadLetter {
  id: string;
  sub: BusSubscriptionRow;
  partition: number;
  seq: number;
  event: EventView;
  eventText: string;
  key: string;
  failureCount: number;
  lastError: string;
  at: Date;
}

/**
 * An event a subscription failed to process 3 times (spec 002): a pending row of events.dlq, and
 * the same on platform.<domain>.dlq (through the bus outbox, in the same transaction), with its
 * failureCount and lastError.
 */
export const writeDeadLetter = async (tx: Tx, d: DeadLetter): Promise<void> => {
  await tx.query(
    `INSERT INTO events.dlq (id, tenant_id, subscription_id, consumer_group, handler_name, source, topic, partition, seq, event_id, type, payload, event,
      failure_count, last_error, status, created_at, updated_at)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12::jsonb, $13, $14, $15, 'pending', $16, $16)`,
    [
      d.id,
      d.sub.tenant_id,
      d.sub.id,
      d.sub.consumer_group,
      d.sub.handler_name,
      d.sub.source,
      d.sub.topic,
      d.partition,
      d.seq,
      d.event.eventId,
      d.event.type,
      JSON.stringify(d.event.payload),
      d.eventText,
      d.failureCount,
      d.lastError,
      d.at,
    ],
  );
  busDeadLetters.inc();
  const value = JSON.stringify({
    dlqId: d.id,
    tenantId: d.sub.tenant_id,
    subscriptionId: d.sub.id,
    consumerGroup: d.sub.consumer_group,
    handlerName: d.sub.handler_name,
    topic: d.sub.topic,
    failureCount: d.failureCount,
    lastError: d.lastError,
    deadLetteredAt: d.at.toISOString(),
    event: d.event,
  });
  await tx.query('INSERT INTO events.outbox (topic, key, value, headers, ts) VALUES ($1, $2, $3, $4::jsonb, $5)', [
    dlqTopicOfDomain(domainOfTopic(d.sub.topic)),
    d.key,
    value,
    JSON.stringify({ dlqId: d.id, eventId: d.event.eventId, type: d.event.type, tenantId: d.sub.tenant_id }),
    d.at,
  ]);
};
