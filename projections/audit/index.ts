import type { ChainHead } from '../../domain/audit/chain';
import { hashChain, START } from '../../domain/audit/chain';
import type { UnchainedRow } from '../../domain/audit/rows';
import { DOMAIN_VIEW, insertable, rowOf } from '../../domain/audit/rows';
import { recordOfDomainEvent, tenantOfDomainEvent } from '../../domain/audit/sources';
import { defineProjections } from '../../infra/services';
import type { AnalyticsProjection } from '../../infra/projections/projection';
import { EVERY_EVENT } from '../../infra/projections/projection';
import { sha256Hex } from '../../infra/security/digest';

const { chain } = hashChain(sha256Hex);

/** ClickHouse columns shared by both audit tables */
export const RECORD_COLUMNS = `
  tenant_id String,
  id String,
  seq UInt64,
  action LowCardinality(String),
  entity_type LowCardinality(String),
  entity_id String,
  actor_id String,
  actor_ip Nullable(String),
  actor_user_agent Nullable(String),
  before Nullable(String),
  after Nullable(String),
  meta Nullable(String),
  trace_id Nullable(String),
  timestamp DateTime64(3, 'UTC'),
  prev_hash String,
  hash String`;

/**
 * The audit view of the domain (spec 002, issue 11): every event of the global log — what the
 * relay publishes on every platform.<domain>.events topic — becomes an audit record in ClickHouse,
 * chained per tenant in log order (the `domain` chain). The carried state is each tenant's chain
 * head, so a rebuild (`platform projections rebuild audit.domain`) recomputes the same hashes.
 * Replaying a batch inserts identical rows, which ReplacingMergeTree collapses; reads take one row
 * per id (LIMIT 1 BY id).
 */
export const auditDomainView: AnalyticsProjection<'audit_domain', ChainHead> = {
  name: DOMAIN_VIEW,
  version: 1,
  mode: 'async',
  target: 'clickhouse',
  handles: [EVERY_EVENT],
  tables: {
    audit_domain: (t) => [
      `CREATE TABLE ${t} (${RECORD_COLUMNS},
      INDEX seq_idx seq TYPE minmax GRANULARITY 1,
      INDEX id_idx id TYPE bloom_filter GRANULARITY 4,
      INDEX actor_idx actor_id TYPE bloom_filter GRANULARITY 4,
      INDEX entity_idx entity_id TYPE bloom_filter GRANULARITY 4
    ) ENGINE = ReplacingMergeTree PARTITION BY toYYYYMM(timestamp) ORDER BY (tenant_id, timestamp, id)
    TTL toDateTime(timestamp) + INTERVAL 90 DAY`,
    ],
  },
  stateKey: tenantOfDomainEvent,
  rows(events, state) {
    const byTenant = new Map<string, UnchainedRow[]>();
    for (const event of events) {
      const row = rowOf(recordOfDomainEvent(event));
      const list = byTenant.get(row.tenant_id);
      if (list) list.push(row);
      else byTenant.set(row.tenant_id, [row]);
    }
    const heads = new Map<string, ChainHead>();
    const rows: ReturnType<typeof insertable>[] = [];
    for (const [tenantId, list] of byTenant) {
      const linked = chain(state.get(tenantId) ?? START, list);
      heads.set(tenantId, linked.head);
      rows.push(...linked.rows.map(insertable));
    }
    return { rows: { audit_domain: rows }, state: heads };
  },
};

export default defineProjections({ projections: [auditDomainView] });
