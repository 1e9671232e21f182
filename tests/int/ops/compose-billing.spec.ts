import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseCommandLine } from '../../../app/cli/commands';
import { GrpcBillingAnswers } from '../../../commands/billing/grpc-client';
import { billingSettingsOf } from '../../../commands/billing/settings';
import type { BillingSettings } from '../../../commands/billing/settings';
import { isLoopback, loadConfig } from '../../../infra/config';
import { billingGrpcPort } from '../../../write-api/billing/serving';
import type { ComposeFile, ComposeService, Vars } from '../../support/compose';
import {
  commandOf,
  isPlatformService,
  loadCompose,
  parseDotEnv,
  secretFiles,
  serviceEnvironment,
} from '../../support/compose';
import type { TestPlatform } from '../../support/platform';
import { startTestPlatform } from '../../support/platform';

/**
 * The gateway of docker-compose.yml asks billing (CheckLimit, plan status) over gRPC of write-api
 * in another container. Without a Docker engine, each role's own settings from the file are run
 * here: write-api's billing gRPC with its certificates, the gateway's client with its own, dialed
 * at loopback under the name the gateway targets — the certificates made by the step the README
 * documents (scripts/grpc-certs.sh).
 */
const file = (name: string) => fileURLToPath(new URL(`../../../${name}`, import.meta.url));
let certsDir: string;
let compose: ComposeFile;
let vars: Vars;

/** whether the service is a platform container (this repository's image) running `platform serve <role>` */
const serves = (service: ComposeService | undefined, role: string): boolean => {
  if (!service || !isPlatformService(service)) return false;
  const invocation = parseCommandLine(commandOf(service));
  return invocation.command === 'serve' && invocation.role === role;
};

/** a role's environment with each /run/secrets/… path replaced by the host file compose mounts there */
const roleSettings = (role: string): BillingSettings => {
  const service = Object.values(compose.services).find((s) => serves(s, role));
  if (!service) throw new Error(`no service runs serve ${role}`);
  const mounted = secretFiles(compose, service);
  const env = Object.fromEntries(
    Object.entries(serviceEnvironment(compose, service, vars)).map(([k, v]) => [k, mounted.get(v) ?? v]),
  );
  return billingSettingsOf(loadConfig(env));
};

let writeApi: BillingSettings;
let gateway: BillingSettings;
let p: TestPlatform | undefined;

beforeAll(async () => {
  certsDir = mkdtempSync(join(tmpdir(), 'compose-grpc-'));
  // the documented step, into a folder of this test's own (GRPC_CERTS_DIR, as the compose file reads it)
  execFileSync('bash', [file('scripts/grpc-certs.sh'), certsDir], { stdio: 'pipe' });
  vars = {
    ...parseDotEnv(readFileSync(file('.env.example'), 'utf8')),
    PLATFORM_SECRET_KEY: randomBytes(32).toString('base64'),
    GRPC_CERTS_DIR: certsDir,
  };
  compose = loadCompose(file('docker-compose.yml'), vars);
  writeApi = roleSettings('write-api');
  gateway = roleSettings('gateway');
});
afterAll(async () => {
  await p?.close();
  rmSync(certsDir, { recursive: true, force: true });
});

describe("docker-compose.yml: the gateway reaches billing's gRPC on write-api", () => {
  it('targets a service running write-api, on the port its gRPC listens on, beyond loopback', () => {
    expect(gateway.enabled).toBe(true);
    const [host, port] = gateway.grpc.target!.split(':');
    expect(serves(compose.services[host!], 'write-api'), `${host} runs serve write-api`).toBe(true);
    expect(Number(port)).toBe(writeApi.grpc.port);
    // another container reaches it only on an address other than loopback
    expect(isLoopback(writeApi.grpc.host)).toBe(false);
  });

  it('is answered over mutual TLS with the certificates each role mounts, under the name the gateway dials', async () => {
    expect(writeApi.grpc.tls && gateway.grpc.tls).toBeTruthy();
    // write-api's billing gRPC with its own certificates, on a loopback port of this run
    p = await startTestPlatform({
      services: ['billing'],
      env: {
        GRPC_HOST: '127.0.0.1',
        GRPC_TLS_CERT: writeApi.grpc.tls!.cert,
        GRPC_TLS_KEY: writeApi.grpc.tls!.key,
        GRPC_TLS_CA: writeApi.grpc.tls!.ca,
      },
    });
    const [host] = gateway.grpc.target!.split(':');
    // the gateway's own client and certificates; the server's certificate must name the host the gateway dials
    const answers = new GrpcBillingAnswers(`127.0.0.1:${billingGrpcPort(p.kernel)}`, gateway.grpc.tls, 10_000, {
      'grpc.ssl_target_name_override': host!,
      'grpc.default_authority': host!,
    });
    try {
      const tenantId = randomUUID();
      expect(await answers.checkLimit(tenantId, 'users')).toMatchObject({ resource: 'users', limit: 5 });
      expect(await answers.planInfo(tenantId)).toMatchObject({ tenantId, status: 'none' });
    } finally {
      answers.close();
    }
    // and a name the certificate does not carry is refused: the check above is the certificate's, not a formality
    const stranger = new GrpcBillingAnswers(`127.0.0.1:${billingGrpcPort(p.kernel)}`, gateway.grpc.tls, 10_000, {
      'grpc.ssl_target_name_override': 'billing.example.com',
      'grpc.default_authority': 'billing.example.com',
    });
    try {
      await expect(stranger.checkLimit(randomUUID(), 'users')).rejects.toMatchObject({ code: 14 }); // UNAVAILABLE
    } finally {
      stranger.close();
    }
  });
});
