import type { BillingContext } from '../../commands/billing/context';
import { GrpcBillingAnswers } from '../../commands/billing/grpc-client';
import type { BillingAnswers } from '../../commands/billing/limits';
import { BillingAdmission } from '../../commands/billing/admission';
import { setGatewayPorts } from '../../infra/http/gateway-ports';
import type { GrpcServer } from '../../infra/grpc';
import { startGrpcServer } from '../../infra/grpc';
import type { Kernel } from '../../infra/kernel';
import { servesSingletons } from '../../infra/cluster/worker';
import { billingServiceDefinition, billingServiceImplementation } from './grpc';

const servers = new WeakMap<Kernel, GrpcServer>();
const admissions = new WeakMap<Kernel, BillingAdmission>();

/** the port billing's gRPC server listens on in this process (tests start it on port 0), or null */
export const billingGrpcPort = (kernel: Kernel): number | null => servers.get(kernel)?.port ?? null;

/** this process's gateway-side billing admission (its caches), when it runs the edge */
export const billingAdmission = (kernel: Kernel): BillingAdmission | null => admissions.get(kernel) ?? null;

/**
 * What billing serves in this process, by role: the gRPC service where billing runs (the
 * all-in-one process and write-api), the gateway's admission where the edge runs (all-in-one:
 * answers from this process's memory; a gateway proxying to write-api: over gRPC).
 */
export const startBillingServing = async (kernel: Kernel, ctx: BillingContext): Promise<void> => {
  const role = kernel.role;
  const target = role === 'gateway' ? ctx.settings.grpc.target : null;
  if (role === 'all' || role === 'gateway') {
    let answers: BillingAnswers = ctx.book;
    if (target) {
      const client = new GrpcBillingAnswers(target, ctx.settings.grpc.tls, kernel.config.GRPC_CALL_TIMEOUT_MS);
      kernel.onClose('billing.grpc-client', async () => client.close());
      answers = client;
    }
    const admission = new BillingAdmission(kernel, answers, {
      planInfoTtlMs: ctx.settings.planInfoTtlMs,
      limitTtlMs: ctx.settings.limitCacheTtlMs,
      epochs: ctx.epochs,
    });
    admissions.set(kernel, admission);
    setGatewayPorts(kernel, {
      admit: (request) => admission.admit(request),
      tenantRateCeiling: (tenantId) => admission.rateCeiling(tenantId),
    });
  }
  // one gRPC server per deployment's port: in an HTTP cluster, worker 0's (docs/decisions.md)
  if ((role === 'all' || role === 'write-api') && servesSingletons() && !servers.has(kernel)) {
    const server = await startGrpcServer({
      host: ctx.settings.grpc.host,
      port: ctx.settings.grpc.port,
      tls: ctx.settings.grpc.tls,
      services: [{ definition: billingServiceDefinition(), implementation: billingServiceImplementation(kernel) }],
    });
    servers.set(kernel, server);
    kernel.onClose('billing.grpc', () => server.close());
    kernel.logger.info(
      { host: ctx.settings.grpc.host, port: server.port, tls: ctx.settings.grpc.tls !== null },
      'billing gRPC listening',
    );
  }
};
