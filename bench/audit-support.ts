import { mergeServiceParts } from '../infra/services';
import type { AnalyticsStore } from '../infra/clickhouse/port';
import { auditServices } from '../tests/support/audit';
import { startTestPlatform } from '../tests/support/platform';
import type { TestPlatform } from '../tests/support/platform';

/** a platform with the audit service on a fresh database (chdb in process), its ClickHouse store ready */
export const startAuditBench = async (
  env: Record<string, string> = {},
): Promise<{ platform: TestPlatform; ch: AnalyticsStore }> => {
  const platform = await startTestPlatform({
    services: mergeServiceParts(auditServices),
    env: { RATE_LIMIT_USER_PER_MIN: '100000000', RATE_LIMIT_TENANT_PER_MIN: '100000000', ...env },
  });
  return { platform, ch: await platform.kernel.analytics() };
};

/**
 * Writes n stored records straight into the audit store with ClickHouse's own generator (seeding
 * 10 million rows through the pipeline would measure the pipeline, not the reads): `tenants`
 * tenants, one record per millisecond ending now, a ~300-byte after member. The chain fields are
 * placeholders — these rows are for read and export timings, not for the verifier.
 */
export const seedRecords = async (ch: AnalyticsStore, n: number, tenants: number, chunk = 1_000_000): Promise<void> => {
  for (let from = 0; from < n; from += chunk) {
    const count = Math.min(chunk, n - from);
    await ch.command(`INSERT INTO ${ch.database}.audit_records
      SELECT concat('bench-', toString(number % ${tenants})) AS tenant_id, toString(generateUUIDv7(number)) AS id, intDiv(number, ${tenants}) + 1 AS seq,
        ['shop.order.placed', 'shop.order.shipped', 'invoice.payment.captured', 'audit.api.called'][number % 4 + 1] AS action, 'order' AS entity_type,
        concat('order-', toString(number % 100000)) AS entity_id, concat('user-', toString(number % 1000)) AS actor_id, '10.0.0.1' AS actor_ip, 'bench/1.0' AS actor_user_agent,
        NULL AS before, concat('{"n":', toString(number), ',"note":"', repeat('x', 280), '"}') AS after, NULL AS meta, lower(hex(randomString(16))) AS trace_id,
        now64(3) - toIntervalMillisecond(${n} - number) AS timestamp, repeat('0', 64) AS prev_hash, repeat('0', 64) AS hash, 'record' AS source, now64(3) AS ingested_at
      FROM numbers(${from}, ${count})`);
    process.stderr.write(`[seed] ${(from + count).toLocaleString('en')}/${n.toLocaleString('en')}\n`);
  }
  await ch.command(`OPTIMIZE TABLE ${ch.database}.audit_records FINAL`).catch(() => undefined);
};
