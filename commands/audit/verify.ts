import type { ChainName } from '../../domain/audit/rows';
import { CHAINS } from '../../domain/audit/rows';
import type { AnalyticsStore } from '../../infra/clickhouse/port';
import type { ChainBreak, ChainHead } from './chain';
import { verifyPage } from './chain';
import { chainPage, chainTenants } from './lookups';

const PAGE = 5000;

export interface VerifyReport {
  tenants: number;
  checked: number;
  breaks: (ChainBreak & { chain: ChainName; tenantId: string })[];
}

/**
 * `platform audit verify [--tenant <id>]`: walks each tenant's hash chains (`log` and `domain`) in
 * seq order from the oldest link the hot store still holds (older ones are in the cold archives),
 * recomputing every hash; reports the first break of each chain.
 */
export const verifyChains = async (
  ch: AnalyticsStore,
  o: { tenantId?: string; onProgress?: (checked: number, total: number) => void } = {},
): Promise<VerifyReport> => {
  const work: { chain: ChainName; tenantId: string; records: number }[] = [];
  for (const chain of Object.keys(CHAINS) as ChainName[]) {
    for (const t of await chainTenants(ch, chain))
      if (!o.tenantId || t.tenantId === o.tenantId) work.push({ chain, ...t });
  }
  const total = work.reduce((n, w) => n + w.records, 0);
  const report: VerifyReport = { tenants: new Set(work.map((w) => w.tenantId)).size, checked: 0, breaks: [] };
  for (const w of work) {
    let head: ChainHead | null = null;
    for (;;) {
      const page = await chainPage(ch, w.chain, w.tenantId, head?.seq ?? null, PAGE);
      if (page.length === 0) break;
      head ??= { seq: Number(page[0]!.seq) - 1, hash: page[0]!.prev_hash };
      const result = verifyPage(head, page);
      report.checked += page.length;
      o.onProgress?.(report.checked, Math.max(total, report.checked));
      if (result.broken) {
        report.breaks.push({ ...result.broken, chain: w.chain, tenantId: w.tenantId });
        break;
      }
      head = result.head;
      if (page.length < PAGE) break;
    }
  }
  return report;
};
