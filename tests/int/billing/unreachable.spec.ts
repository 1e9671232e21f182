import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { BillingAdmission, STALE_LIMIT_MS } from '../../../commands/billing/admission';
import { GrpcBillingAnswers } from '../../../commands/billing/grpc-client';
import { isDomainError } from '../../../domain/shared/errors';
import type { AdmissionRequest } from '../../../infra/http/gateway-ports';
import type { Kernel } from '../../../infra/kernel';
import { billingGrpcPort } from '../../../write-api/billing/serving';
import { offsetClock } from '../../support/clock';
import { pollUntil } from '../../support/poll';
import type { TestPlatform } from '../../support/platform';
import { startTestPlatform } from '../../support/platform';
import type { TcpProxy } from '../../support/tcp-proxy';
import { startTcpProxy } from '../../support/tcp-proxy';

/**
 * A gateway in front of write-api while billing's gRPC cannot be reached (docs/decisions.md,
 * "Billing unreachable"): the answers of the last STALE_LIMIT_MS stand in; without one a mutation
 * is 503 billing-unavailable with Retry-After — never let through unchecked — and a read passes.
 * The gateway's own gRPC client asks a real billing server through a TCP relay the test cuts.
 */
const TTL_MS = 60_000;
const clock = offsetClock();
let p: TestPlatform;
let relay: TcpProxy;
let answers: GrpcBillingAnswers;
let admission: BillingAdmission;

const request = (tenantId: string, method: string, counts?: string): AdmissionRequest => ({
  tenantId,
  method,
  route: '/v1/things',
  namespace: 'things',
  counts,
  whileSuspended: 'refused',
});
/** the refusal admit() threw, as the gateway's problem response carries it; null when admitted */
const refusal = async (r: AdmissionRequest) => {
  try {
    await admission.admit(r);
    return null;
  } catch (error) {
    if (!isDomainError(error)) throw error;
    return { status: error.status, suffix: error.suffix, retryAfter: error.headers?.['Retry-After'] };
  }
};
const UNAVAILABLE = { status: 503, suffix: 'billing-unavailable', retryAfter: '5' };

beforeAll(async () => {
  p = await startTestPlatform({ services: ['billing'], clock, captureLogs: true });
  relay = await startTcpProxy({ host: '127.0.0.1', port: billingGrpcPort(p.kernel)! });
  answers = new GrpcBillingAnswers(`127.0.0.1:${relay.port}`, null, 2_000);
});
afterAll(async () => {
  answers?.close();
  await relay?.close();
  await p?.close();
});
beforeEach(async () => {
  await relay.restore();
  // billing answers (again, once the channel has reconnected after a test that cut it: its backoff)
  await pollUntil(
    () =>
      answers.checkLimit(randomUUID(), 'users').then(
        () => true,
        () => false,
      ),
    (ok) => ok,
    { timeoutMs: 10_000, what: 'billing answering' },
  );
  clock.reset();
  // a gateway process of its own, without the shared epochs, whose log delivers nothing: the
  // platform's start-up events (the seeded plan) would flush its answers at a moment of their own;
  // the test flushes as the log's delivery would
  const quietLog = { on: () => undefined } as unknown as Kernel['invalidations'];
  const gateway = Object.create(p.kernel, { invalidations: { value: quietLog } }) as Kernel;
  admission = new BillingAdmission(gateway, answers, { planInfoTtlMs: TTL_MS, limitTtlMs: TTL_MS });
});

describe('the gateway while billing cannot be reached', () => {
  it('uses the answers billing gave in the last minutes, beyond their TTL', async () => {
    const tenantId = randomUUID();
    // given answers fetched while billing was reachable
    expect(await refusal(request(tenantId, 'POST', 'users'))).toBeNull();
    // when billing goes away and the answers' TTL passes
    await relay.cut();
    clock.advance(TTL_MS + 1_000);
    // then they still decide: the tenant's plan is enforced, nothing is refused for the outage
    expect(await refusal(request(tenantId, 'POST', 'users'))).toBeNull();
    expect(await refusal(request(tenantId, 'PATCH'))).toBeNull();
    expect(p.logLines().some((l) => /billing unreachable/.test(l.msg))).toBe(true);
  });

  it('refuses mutations with 503 and Retry-After once the last answer is too old, and lets reads pass', async () => {
    const tenantId = randomUUID();
    expect(await refusal(request(tenantId, 'POST', 'users'))).toBeNull();
    await relay.cut();
    clock.advance(STALE_LIMIT_MS + 1_000);
    expect(await refusal(request(tenantId, 'POST', 'users'))).toEqual(UNAVAILABLE);
    expect(await refusal(request(tenantId, 'DELETE'))).toEqual(UNAVAILABLE);
    expect(await refusal(request(tenantId, 'GET'))).toBeNull();
  });

  it('refuses the mutations of a tenant it never had an answer for, at once', async () => {
    await relay.cut();
    const tenantId = randomUUID();
    expect(await refusal(request(tenantId, 'POST', 'users'))).toEqual(UNAVAILABLE);
    expect(await refusal(request(tenantId, 'PUT'))).toEqual(UNAVAILABLE);
    expect(await refusal(request(tenantId, 'GET'))).toBeNull();
    // billing's own routes decide on billing's state: a blocked tenant's way back is not closed by the outage
    expect(await refusal({ ...request(tenantId, 'POST'), namespace: 'billing' })).toBeNull();
  });

  it("does not stand in with an answer billing's events have since flushed", async () => {
    const tenantId = randomUUID();
    expect(await refusal(request(tenantId, 'POST', 'users'))).toBeNull();
    await relay.cut();
    // the tenant's subscription changed (what the log delivers to every gateway): the answer is no longer the tenant's
    admission.flushTenant(tenantId);
    expect(await refusal(request(tenantId, 'POST', 'users'))).toEqual(UNAVAILABLE);
  });

  it('admits again as soon as billing answers', async () => {
    const tenantId = randomUUID();
    await relay.cut();
    expect(await refusal(request(tenantId, 'POST', 'users'))).toEqual(UNAVAILABLE);
    await relay.restore();
    // the gateway's channel reconnects within its capped backoff
    expect(
      await pollUntil(
        () => refusal(request(tenantId, 'POST', 'users')),
        (r) => r === null,
        { timeoutMs: 10_000, what: 'an admission' },
      ),
    ).toBeNull();
  });
});
