import { causingSpanId } from '../../infra/observability/tracing';
import { domainOfTopic } from '../../domain/modules/manifest';
import { BULK_IMPORT_SUPPRESSION_MS } from '../../domain/events/lag';
import { eventErrors } from '../../domain/events/errors';
import { publishVerdict, sourceOf, typeFitsTopic } from '../../domain/events/publishing';
import { compareSemver } from '../../domain/events/semver';
import { utcDay } from '../../domain/billing/usage';
import type { EventHeaders } from '../../domain/shared/envelope';
import { commonErrors } from '../../domain/shared/errors';
import type { Principal } from '../../infra/http/auth';
import type { Kernel } from '../../infra/kernel';
import { usageLimits } from '../../infra/usage-limits';
import { publishingOf } from './catalog';
import { eventsContext } from './context';
import { stagingBatcher } from './stage-batch';
import { currentSchemaOf } from '../../domain/events/catalog';
import { registeredSchema } from '../../projections/events/queries';
import { cachedModule } from '../modules/lookups';

/** spec 002, Limits: 500 events a batch, 1 MB a payload (1 MiB of JSON, as the platform's body limit) */
export const BATCH_MAX = 500;
export const PAYLOAD_MAX_BYTES = 1_048_576;

export interface PublishInput {
  type: string;
  payload: Record<string, unknown>;
  /** semver of the topic's schema the payload follows (default: the topic's current) */
  schemaVersion?: string;
  /** the partition key: events of one entity keep their order (default: the event id) */
  entityId?: string;
}

export interface Published {
  eventId: string;
  type: string;
}

/**
 * Publishes events on a topic for the caller's tenant (spec 002, Event bus): checked whole — the
 * topic, who may publish each type, payload sizes, schema versions — then, if the log answers,
 * staged in one statement (all or nothing) for the bus relay to publish. The envelope is the
 * platform's: a UUID v7 eventId, the source (module slug, or app), the tenant from the token, the
 * request's trace id, the time.
 */
export const publishEvents = async (
  kernel: Kernel,
  principal: Principal,
  traceId: string,
  topic: string,
  inputs: PublishInput[],
  fieldOf: (index: number) => string,
): Promise<{ events: Published[]; createdAt: string }> => {
  const ctx = eventsContext(kernel);
  const { entry, publisher } = await publishingOf(kernel.db, principal, topic, (id) => cachedModule(kernel, id));
  inputs.forEach((input, i) => {
    if (!typeFitsTopic(input.type, topic)) {
      throw commonErrors.validation([
        {
          field: `${fieldOf(i)}type`,
          message: `${input.type} belongs on platform.${input.type.split('.')[0]}.events, not ${topic}`,
          code: 'TOPIC_MISMATCH',
        },
      ]);
    }
    const verdict = publishVerdict(publisher, input.type);
    if (!verdict.allowed) throw eventErrors.publishForbidden(verdict.reason);
  });
  const payloads = inputs.map((input, i) => {
    const text = JSON.stringify(input.payload);
    if (Buffer.byteLength(text) > PAYLOAD_MAX_BYTES)
      throw eventErrors.payloadTooLarge(PAYLOAD_MAX_BYTES, `${fieldOf(i)}payload`);
    return text;
  });
  const schema = currentSchemaOf(
    entry,
    await ctx.schemas.get(entry.topic, () => registeredSchema(kernel.db, entry.topic)),
  );
  inputs.forEach((input, i) => {
    if (input.schemaVersion !== undefined && compareSemver(input.schemaVersion, schema.schemaVersion) > 0) {
      throw commonErrors.validation([
        {
          field: `${fieldOf(i)}schemaVersion`,
          message: `the topic's schema is at ${schema.schemaVersion}`,
          code: 'UNKNOWN_SCHEMA_VERSION',
        },
      ]);
    }
  });
  if (!(await ctx.broker.reachable())) throw eventErrors.brokerUnavailable();

  const now = kernel.clock.now();
  const timestamp = now.toISOString();
  const source = sourceOf(publisher);
  const actorId = principal.impersonatorId ? `${principal.userId} (by ${principal.impersonatorId})` : principal.userId;
  // the request's span, which each delivery of these events continues (commands/events/delivery.ts)
  const spanId = causingSpanId(traceId);
  const events = inputs.map((input, i) => {
    const eventId = kernel.ids.next();
    const entityId = input.entityId ?? eventId;
    // the spec's Event (domain/shared/envelope.ts), members in encodeEvent's order; the payload's
    // JSON text is spliced in as it was measured: what was checked is what is sent
    const value =
      `{"eventId":${JSON.stringify(eventId)},"type":${JSON.stringify(input.type)},"source":${JSON.stringify(source)},"tenantId":${JSON.stringify(principal.tenantId)},` +
      `"traceId":${JSON.stringify(traceId)},"timestamp":${JSON.stringify(timestamp)},"schemaVersion":${JSON.stringify(input.schemaVersion ?? schema.schemaVersion)},` +
      `"payload":${payloads[i]}}`;
    const headers: EventHeaders = { eventId, type: input.type, tenantId: principal.tenantId, source, traceId, actorId };
    if (spanId) headers.spanId = spanId;
    return { eventId, type: input.type, key: entityId, value, headers: JSON.stringify(headers) };
  });
  const limit = await usageLimits(kernel).limitOf(principal.tenantId, 'events_per_day');
  const { published } = await stagingBatcher(kernel).submit({
    tenantId: principal.tenantId,
    day: utcDay(now),
    limit,
    topic,
    events: events.map(({ key, value, headers }) => ({ key, value, headers })),
    at: now,
  });
  // billing's cached answers change only once the day's count reaches the limit (then "allowed" turns
  // false); below it each publish is counted exactly here, and CheckLimit reads the day's count as it
  // is (docs/decisions.md) instead of every publish dropping the tenant's entry in every process
  if (limit > 0 && published >= limit) await usageLimits(kernel).changed(principal.tenantId);
  await noteVolume(kernel, principal.tenantId, topic, events.length).catch((error: unknown) =>
    kernel.logger.warn({ err: error }, 'bulk-import detection failed'),
  );
  return { events: events.map((e) => ({ eventId: e.eventId, type: e.type })), createdAt: timestamp };
};

/**
 * A tenant publishing more than EVENTS_BULK_IMPORT_THRESHOLD events a minute on a topic is in a
 * bulk-import spike (spec 002): its subscriptions' lag warnings are held back for 30 minutes.
 */
const noteVolume = async (kernel: Kernel, tenantId: string, topic: string, count: number): Promise<void> => {
  const threshold = eventsContext(kernel).settings.bulkImportThreshold;
  const window = await kernel.engines.cache.incrWindow(`events:volume:${tenantId}:${topic}`, 60_000, count);
  if (window.count < threshold || window.count - count >= threshold) return;
  const until = new Date(kernel.clock.now().getTime() + BULK_IMPORT_SUPPRESSION_MS);
  await kernel.db.query(
    `INSERT INTO events.bulk_imports (tenant_id, topic, until) VALUES ($1, $2, $3)
    ON CONFLICT (tenant_id, topic) DO UPDATE SET until = greatest(events.bulk_imports.until, EXCLUDED.until)`,
    [tenantId, topic, until],
  );
  kernel.logger.info(
    { tenantId, topic, domain: domainOfTopic(topic), until },
    'bulk-import spike: lag warnings held back for 30 minutes',
  );
};
