import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FREE_PLAN_ID } from '../../../domain/billing/plan';
import { billingGrpcPort } from '../../../write-api/billing/serving';
import { billingGrpcClient } from '../../support/billing';
import type { TestCertificates } from '../../support/certs';
import { makeTestCertificates } from '../../support/certs';
import type { TestPlatform } from '../../support/platform';
import { startTestPlatform } from '../../support/platform';

/** gRPC with GRPC_TLS_CERT, GRPC_TLS_KEY and GRPC_TLS_CA: mutual TLS, a client without a trusted certificate is refused */
let certs: TestCertificates;
let p: TestPlatform;
let target: string;

beforeAll(async () => {
  certs = makeTestCertificates();
  p = await startTestPlatform({
    services: ['billing'],
    env: { GRPC_TLS_CERT: certs.serverCert, GRPC_TLS_KEY: certs.serverKey, GRPC_TLS_CA: certs.ca },
  });
  target = `127.0.0.1:${billingGrpcPort(p.kernel)}`;
});
afterAll(async () => {
  await p?.close();
  certs?.remove();
});

describe('billing gRPC with mutual TLS', () => {
  it('answers a client that presents a certificate signed by the CA', async () => {
    const c = billingGrpcClient(target, { ca: certs.ca, cert: certs.clientCert, key: certs.clientKey });
    try {
      expect(((await c.call('RetrievePlan', { id: FREE_PLAN_ID })).plan as { name: string }).name).toBe('free');
    } finally {
      c.close();
    }
  });

  it('refuses a client without a certificate, one from another CA, and a plaintext client', async () => {
    for (const client of [
      billingGrpcClient(target, { ca: certs.ca }),
      billingGrpcClient(target, { ca: certs.ca, cert: certs.strangerCert, key: certs.strangerKey }),
      billingGrpcClient(target),
    ]) {
      try {
        const failure = await client.fail('RetrievePlan', { id: FREE_PLAN_ID });
        expect(failure.code).toBe(grpc.status.UNAVAILABLE);
      } finally {
        client.close();
      }
    }
  });
});

describe('billing gRPC configuration', () => {
  it('refuses plaintext beyond loopback and half a TLS configuration, naming the variables', async () => {
    const { loadConfig } = await import('../../../infra/config');
    expect(() => loadConfig({ GRPC_HOST: '0.0.0.0' })).toThrow(/GRPC_HOST: gRPC without TLS listens on loopback only/);
    expect(() => loadConfig({ GRPC_TLS_CERT: certs.serverCert })).toThrow(/GRPC_TLS_CERT: .*set together/);
    expect(() =>
      loadConfig({ GRPC_HOST: '0.0.0.0', GRPC_TLS_CERT: 'a', GRPC_TLS_KEY: 'b', GRPC_TLS_CA: 'c' }),
    ).not.toThrow();
  });
});
