import type { Kernel } from '../../infra/kernel';
import { progressBar } from './progress';

/**
 * `platform audit verify [--tenant <id>]`: checks the audit hash chains (commands/audit/verify.ts)
 * with progress on stderr; prints each tenant chain's first break and exits 1 when there is one.
 * Kept in its own file so the CLI can move as a whole.
 */
export type AuditInvocation = { command: 'audit'; action: 'verify'; tenant?: string };

export const AUDIT_USAGE =
  '  platform audit verify [--tenant <id>]             check the audit hash chains, reporting the first break';

export const parseAudit = (
  args: string[],
  options: (args: string[]) => { tenant?: string },
  usage: (message: string) => Error,
): AuditInvocation => {
  const [action, ...rest] = args;
  if (action !== 'verify') throw usage('audit needs verify [--tenant <id>]');
  const { tenant } = options(rest);
  if (tenant !== undefined && tenant.trim() === '') throw usage('audit verify --tenant needs a tenant id');
  return { command: 'audit', action: 'verify', tenant };
};

export const runAudit = async (kernel: Kernel, invocation: AuditInvocation): Promise<number> => {
  const { verifyChains } = await import('../../commands/audit/verify');
  const bar = progressBar('audit verify');
  const report = await verifyChains(await kernel.analytics(), {
    tenantId: invocation.tenant,
    onProgress: (done, total) => bar.update(done, total),
  });
  for (const b of report.breaks) {
    console.log(`BROKEN\ttenant ${b.tenantId}\tchain ${b.chain}\tseq ${b.seq}\trecord ${b.id}\t${b.reason}`);
  }
  bar.done(
    report.breaks.length
      ? `${report.breaks.length} broken chain(s) among ${report.tenants} tenant(s); ${report.checked} records checked`
      : `${report.checked} records of ${report.tenants} tenant(s) verified; every chain is intact`,
  );
  return report.breaks.length ? 1 : 0;
};
