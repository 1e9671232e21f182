import { SchemaEvent, BusSubscriptionEvent, subscriptionEventTypes } from '../../domain/events/events';
import { defineProjections } from '../../infra/services';
import type { Projection } from '../../infra/projections/projection';
import { sql } from '../../infra/projections/projection';

/** a tenant's subscriptions (GET /events/subscriptions, the delivery workers): inline, so a subscription serves at once */
export const subscriptionsProjection: Projection<'events_subscriptions'> = {
  name: 'events.subscriptions',
  version: 1,
  mode: 'inline',
  handles: subscriptionEventTypes,
  tables: {
    events_subscriptions: (t) => [
      `CREATE TABLE ${t} (tenant_id text NOT NULL, id text NOT NULL, topic text NOT NULL, consumer_group text NOT NULL, handler_name text NOT NULL,
        source text NOT NULL, delivery text NOT NULL, dedup boolean NOT NULL, status text NOT NULL, created_at timestamptz NOT NULL,
        deleted_at timestamptz, last_seek_to timestamptz, version int NOT NULL, PRIMARY KEY (tenant_id, id))`,
      // a consumer group reads a topic once per tenant: the handler checks under a lock, this is the last wall
      `CREATE UNIQUE INDEX ON ${t} (tenant_id, consumer_group, topic) WHERE status = 'active'`,
      `CREATE INDEX ON ${t} (topic) WHERE status = 'active'`,
    ],
  },
  evolve: (stored, t) => {
    const e = BusSubscriptionEvent.parse({ type: stored.type, data: stored.data });
    const table = t.events_subscriptions;
    switch (e.type) {
      case 'events.subscription.created': {
        const d = e.data;
        return [
          sql(
            `INSERT INTO ${table} (tenant_id, id, topic, consumer_group, handler_name, source, delivery, dedup, status, created_at, version)
          VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'active', $9, $10) ON CONFLICT (tenant_id, id) DO NOTHING`,
            stored.tenantId,
            d.subscriptionId,
            d.topic,
            d.consumerGroup,
            d.handlerName,
            d.source,
            d.delivery,
            d.dedup,
            d.createdAt,
            stored.streamVersion,
          ),
        ];
      }
      case 'events.subscription.deleted':
        return [
          sql(
            `UPDATE ${table} SET status = 'deleted', deleted_at = $3, version = $4 WHERE tenant_id = $1 AND id = $2 AND version < $4`,
            stored.tenantId,
            e.data.subscriptionId,
            e.data.deletedAt,
            stored.streamVersion,
          ),
        ];
      case 'events.subscription.sought':
        return [
          sql(
            `UPDATE ${table} SET last_seek_to = $3, version = $4 WHERE tenant_id = $1 AND id = $2 AND version < $4`,
            stored.tenantId,
            e.data.subscriptionId,
            e.data.seekTo,
            stored.streamVersion,
          ),
        ];
    }
  },
};

/** topic schemas (platform tenant): the current version of each topic and every version it had */
export const schemasProjection: Projection<'events_topic_schemas' | 'events_schema_versions'> = {
  name: 'events.schemas',
  version: 1,
  mode: 'inline',
  handles: ['events.schema.registered'],
  tables: {
    events_topic_schemas: (t) => [
      `CREATE TABLE ${t} (tenant_id text NOT NULL, topic text NOT NULL, schema_version text NOT NULL, proto_definition text NOT NULL, policy text NOT NULL,
        registered_by text NOT NULL, registered_at timestamptz NOT NULL, version int NOT NULL, PRIMARY KEY (tenant_id, topic))`,
    ],
    events_schema_versions: (t) => [
      `CREATE TABLE ${t} (tenant_id text NOT NULL, topic text NOT NULL, schema_version text NOT NULL, proto_definition text NOT NULL,
        registered_at timestamptz NOT NULL, stream_version int NOT NULL, PRIMARY KEY (tenant_id, topic, stream_version))`,
    ],
  },
  evolve: (stored, t) => {
    const { data: d } = SchemaEvent.parse({ type: stored.type, data: stored.data });
    return [
      sql(
        `INSERT INTO ${t.events_topic_schemas} AS s (tenant_id, topic, schema_version, proto_definition, policy, registered_by, registered_at, version)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
        ON CONFLICT (tenant_id, topic) DO UPDATE SET schema_version = EXCLUDED.schema_version, proto_definition = EXCLUDED.proto_definition, policy = EXCLUDED.policy,
          registered_by = EXCLUDED.registered_by, registered_at = EXCLUDED.registered_at, version = EXCLUDED.version
        WHERE s.version < EXCLUDED.version`,
        stored.tenantId,
        d.topic,
        d.schemaVersion,
        d.protoDefinition,
        d.breakingChangesPolicy,
        d.registeredBy,
        d.registeredAt,
        stored.streamVersion,
      ),
      sql(
        `INSERT INTO ${t.events_schema_versions} (tenant_id, topic, schema_version, proto_definition, registered_at, stream_version)
        VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING`,
        stored.tenantId,
        d.topic,
        d.schemaVersion,
        d.protoDefinition,
        d.registeredAt,
        stored.streamVersion,
      ),
    ];
  },
};

export default defineProjections({ projections: [subscriptionsProjection, schemasProjection] });
