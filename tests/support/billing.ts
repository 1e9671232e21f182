import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { PLATFORM_TENANT_ID } from '../../domain/identity/constants';
import type { ServiceParts } from '../../infra/services';
import { mergeServiceParts } from '../../infra/services';
import type { Queryable } from '../../infra/postgres/db';
import billingProjections from '../../projections/billing';
import { identityPeople } from '../../commands/identity/people';
import identityProjections from '../../projections/identity';
import billingRead from '../../read-api/billing';
import billingWrite from '../../write-api/billing';
import billingWorkers from '../../workers/billing';

/** the billing service's modules, as discovery finds them, with identity's read models (tenants, owners' emails) */
export const billingServices: ServiceParts = mergeServiceParts({
  write: [billingWrite],
  read: [billingRead],
  projections: [...billingProjections.projections, ...identityProjections.projections],
  people: identityPeople,
  workers: [billingWorkers],
});

export const BILLING_PERMISSIONS = ['billing.view', 'billing.plan.change'];

/**
 * A tenant as identity's inline projections would leave it after registration (suites with test
 * tokens run without identity's commands): its row in rm.iam_tenants and its owner's account.
 */
export const seedTenant = async (
  q: Queryable,
  tenantId: string = randomUUID(),
  owner: { userId?: string; email?: string } = {},
): Promise<{ tenantId: string; ownerId: string; email: string }> => {
  const ownerId = owner.userId ?? randomUUID();
  const email = owner.email ?? `owner-${ownerId.slice(0, 8)}@example.test`;
  await q.query(
    `INSERT INTO rm.iam_accounts (tenant_id, id, email, first_name, last_name, email_verified, status, created_at, updated_at, version)
    VALUES ($1, $2, $3, 'Test', 'Owner', true, 'active', now(), now(), 1) ON CONFLICT (tenant_id, id) DO NOTHING`,
    [PLATFORM_TENANT_ID, ownerId, email],
  );
  await q.query(
    `INSERT INTO rm.iam_tenants (tenant_id, name, slug, owner_id, owner_role_id, created_at) VALUES ($1, $2, $2, $3, 'role', now())
    ON CONFLICT (tenant_id) DO NOTHING`,
    [tenantId, `t-${tenantId.slice(0, 8)}`, ownerId],
  );
  return { tenantId, ownerId, email };
};

/**
 * A client of platform.billing.v1 generated independently from the repo's .proto files
 * (@grpc/grpc-js with @grpc/proto-loader, none of the platform's gRPC code): the interop check.
 */
export type GrpcResult = Record<string, unknown> & { [k: string]: unknown };
export interface BillingGrpcClient {
  call(method: string, request: Record<string, unknown>): Promise<GrpcResult>;
  /** the status code of a failing call (throws when it succeeds) */
  fail(
    method: string,
    request: Record<string, unknown>,
  ): Promise<{ code: number; details: string; problemType: string | undefined }>;
  close(): void;
}

const PROTO_DIR = new URL('../../proto', import.meta.url).pathname;

export const billingGrpcClient = (
  target: string,
  tls?: { ca: string; cert?: string; key?: string },
): BillingGrpcClient => {
  const definition = protoLoader.loadSync('platform/billing/v1/billing_service.proto', {
    includeDirs: [PROTO_DIR],
    keepCase: true,
    longs: String,
    enums: String,
    defaults: true,
  });
  const pkg = grpc.loadPackageDefinition(definition) as unknown as {
    platform: { billing: { v1: { BillingService: grpc.ServiceClientConstructor } } };
  };
  const credentials = tls
    ? grpc.credentials.createSsl(
        readFileSync(tls.ca),
        tls.key ? readFileSync(tls.key) : null,
        tls.cert ? readFileSync(tls.cert) : null,
      )
    : grpc.credentials.createInsecure();
  const client = new pkg.platform.billing.v1.BillingService(target, credentials) as grpc.Client &
    Record<
      string,
      (r: unknown, o: grpc.CallOptions, cb: (e: grpc.ServiceError | null, res: GrpcResult) => void) => void
    >;
  const call = (method: string, request: Record<string, unknown>) =>
    new Promise<GrpcResult>((resolve, reject) => {
      client[method]!(request, { deadline: Date.now() + 10_000 }, (error, response) =>
        error ? reject(error) : resolve(response),
      );
    });
  return {
    call,
    fail: async (method, request) => {
      try {
        await call(method, request);
      } catch (error) {
        const e = error as grpc.ServiceError;
        return { code: e.code, details: e.details, problemType: e.metadata?.get('problem-type')[0]?.toString() };
      }
      throw new Error(`${method} succeeded; a failure was expected`);
    },
    close: () => client.close(),
  };
};

/** limits at or above the free plan's in every field (so a move from free is an upgrade), with overrides */
export const LIMITS = (overrides: Record<string, number> = {}) => ({
  users: 10,
  records: 100_000,
  storage_bytes: 10_737_418_240,
  events_per_day: 100_000,
  modules: 10,
  feature_flags: 100,
  custom_domains: 5,
  included_subtenants: 0,
  requests_per_minute: 0,
  money_max_transaction: 10_000_000,
  money_max_balance: 100_000_000,
  ...overrides,
});

const passthrough = {
  name: 'test.usage',
  decider: { initialState: () => ({}), evolve: (s: object) => s, decide: () => [] },
  stateSchema: 'test.usage.v1',
};

/**
 * Appends one event of another service (a member added, a file uploaded) as that service would,
 * on a stream of its own per item, so billing's usage projection counts it (suites with test tokens
 * run without those services' commands).
 */
export const recordServiceEvent = async (
  kernel: import('../../infra/kernel').Kernel,
  tenantId: string,
  itemId: string,
  type: string,
  data: Record<string, unknown>,
): Promise<void> => {
  await kernel.commands.run(
    { tenantId, actorId: 'test', traceId: null, correlationId: null, causationId: null },
    async (uow) => {
      const loaded = await uow.load(passthrough, `test.usage:${tenantId}:${itemId}`);
      uow.record(passthrough, loaded, [{ type, data }], {});
    },
  );
};
