import { domainOfTopic } from '../../domain/modules/manifest';
import { BULK_IMPORT_SUPPRESSION_MS } from '../../domain/events/lag';
import { eventErrors } from '../../domain/events/errors';
import { publishVerdict, sourceOf, typeFitsTopic } from '../../domain/events/publishing';
import { compareSemver } from '../../domain/events/semver';
import { billingErrors } from '../../domain/billing/errors';
import { utcDay } from '../../domain/billing/usage';
import type { EventHeaders } from '../../domain/shared/envelope';
import { commonErrors } from '../../domain/shared/errors';
import type { Principal } from '../../infra/http/auth';
import type { Kernel } from '../../infra/kernel';
import { usageLimits } from '../../infra/usage-limits';
import { publishingOf } from './catalog';
import { eventsContext } from './context';
import { currentSchema } from '../../projections/events/queries';

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
 * The plan's events_per_day and the staging, in one statement: the tenant's counter row for the day
 * moves only when the publish fits (concurrent publishes never overshoot; $4 ≤ 0: no limit) and the
 * events ($6..$8, in their order) are staged only when it moved. The row stays locked for this one
 * statement: held across a transaction's round trips it was the queue every publish of a tenant
 * waited in (at 1,000 publishes/s the pool ran dry and the bus answered 503).
 */
const STAGE_WITHIN_DAILY_LIMIT = `WITH counted AS (
    INSERT INTO events.daily_usage AS u (tenant_id, day, published) VALUES ($1, $2, $3)
    ON CONFLICT (tenant_id, day) DO UPDATE SET published = u.published + EXCLUDED.published
      WHERE $4::bigint <= 0 OR u.published + EXCLUDED.published <= $4::bigint
    RETURNING 1
  ), staged AS (
    INSERT INTO events.outbox (topic, key, value, headers, ts)
    SELECT $5, k, v, h::jsonb, $9 FROM unnest($6::text[], $7::text[], $8::text[]) WITH ORDINALITY AS t(k, v, h, n)
    WHERE EXISTS (SELECT FROM counted) ORDER BY n
    RETURNING 1
  )
  SELECT count(*)::int AS staged FROM staged`;

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
  const { entry, publisher } = await publishingOf(kernel.db, principal, topic);
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
  const schema = await currentSchema(kernel.db, entry);
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
    return { eventId, type: input.type, key: entityId, value, headers: JSON.stringify(headers) };
  });
  const limit = await usageLimits(kernel).limitOf(principal.tenantId, 'events_per_day');
  const day = utcDay(now);
  const fits =
    (limit <= 0 || events.length <= limit) &&
    (
      await kernel.db.query<{ staged: number }>(STAGE_WITHIN_DAILY_LIMIT, [
        principal.tenantId,
        day,
        events.length,
        limit,
        topic,
        events.map((e) => e.key),
        events.map((e) => e.value),
        events.map((e) => e.headers),
        now,
      ])
    ).rows[0]?.staged === events.length;
  if (!fits) {
    const { rows } = await kernel.db.query<{ published: string }>(
      'SELECT published::text FROM events.daily_usage WHERE tenant_id = $1 AND day = $2',
      [principal.tenantId, day],
    );
    throw billingErrors.planLimitExceeded('events_per_day', Number(rows[0]?.published ?? 0), limit);
  }
  await usageLimits(kernel).changed(principal.tenantId);
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
