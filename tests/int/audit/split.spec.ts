import { randomBytes, randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mergeServiceParts } from '../../../infra/services';
import { auditClient, auditServices, eventually } from '../../support/audit';
import type { TestDatabase } from '../../support/db';
import { createTestDatabase } from '../../support/db';
import type { TestPlatform } from '../../support/platform';
import { startTestPlatform, tallyServices } from '../../support/platform';
import { testToken } from '../../support/auth';
import { startClickHouse, stopRole } from '../../support/split';

/**
 * The audit service in split deployment, the roles in this process sharing one ClickHouse (chdb
 * served over HTTP: `platform serve` refuses a role without CLICKHOUSE_URL): the gateway proxies to write-api
 * and read-api, the workers role runs the consumer and the domain view. The record keeps the
 * client's address, which the gateway forwards, not the gateway's own.
 */
const services = mergeServiceParts(tallyServices, auditServices);
const secret = randomBytes(32).toString('base64');
let database: TestDatabase;
const roles: TestPlatform[] = [];
let gateway: TestPlatform;
let clickhouse: Awaited<ReturnType<typeof startClickHouse>>;

beforeAll(async () => {
  database = await createTestDatabase('auds');
  clickhouse = await startClickHouse(join(tmpdir(), `platform-auds-ch-${process.pid}`));
  const env = { PLATFORM_SECRET_KEY: secret, CLICKHOUSE_URL: clickhouse.url };
  const writeApi = await startTestPlatform({ role: 'write-api', env, services, database });
  const readApi = await startTestPlatform({ role: 'read-api', env, services, database });
  const workers = await startTestPlatform({ role: 'workers', env, services, database });
  gateway = await startTestPlatform({
    role: 'gateway',
    env: { ...env, WRITE_API_URL: writeApi.url, READ_API_URL: readApi.url },
    services,
    database,
  });
  roles.push(gateway, writeApi, readApi, workers);
});
afterAll(async () => {
  for (const role of roles) await role.close();
  if (clickhouse) {
    await stopRole(clickhouse.process);
    rmSync(clickhouse.folder, { recursive: true, force: true });
  }
  await database?.drop();
});

describe('the audit API through the gateway to write-api and read-api', () => {
  it('records with the client address and agent, and reads the record back', async () => {
    const tenant = `split-${randomUUID()}`;
    const client = auditClient(gateway.url, tenant, 'u-split');
    // from another loopback address than the one the gateway uses towards write-api
    const posted = await new Promise<{ status: number; body: { auditId: string } }>((resolve, reject) => {
      const req = request(
        `${gateway.url}/v1/audit`,
        {
          method: 'POST',
          localAddress: '127.0.0.3',
          headers: {
            authorization: `Bearer ${testToken(tenant, 'u-split', ['audit.read'])}`,
            'content-type': 'application/json',
            'user-agent': 'split-client/1',
          },
        },
        (res) => {
          let text = '';
          res.on('data', (c) => {
            text += c;
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
        },
      );
      req.on('error', reject);
      req.end(JSON.stringify({ action: 'shop.order.placed', entityType: 'order', entityId: 'o-1' }));
    });
    expect(posted.status).toBe(202);
    const got = await eventually(async () => {
      const res = await client.call('GET', `/audit/${posted.body.auditId}`);
      return res.status === 200 ? res.body : null;
    }, 15_000);
    expect(got).toMatchObject({
      actorId: 'u-split',
      actorIp: '127.0.0.3',
      actorUserAgent: 'split-client/1',
      entityId: 'o-1',
    });
    const exported = await client.call(
      'GET',
      `/audit/export?since=${encodeURIComponent(new Date(Date.now() - 60_000).toISOString())}&until=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`,
    );
    expect(exported.status).toBe(200);
    expect(exported.headers.get('content-disposition')).toMatch(/^attachment/);
    expect(exported.body.map((r: { id: string }) => r.id)).toContain(posted.body.auditId);
  });
});
