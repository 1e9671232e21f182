import { createServer, type Server } from 'node:net';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ObjectNotFoundError } from '../../../infra/objects';
import { requireEnv } from '../../support/env';
import type { TestPlatform } from '../../support/platform';
import { startTestPlatform } from '../../support/platform';

/** a server that accepts connections and drops them at once, counting them */
const droppingServer = async (): Promise<{ server: Server; port: number; connections: () => number }> => {
  let n = 0;
  const server = createServer((socket) => {
    n += 1;
    socket.destroy();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const address = server.address();
  return { server, port: typeof address === 'object' && address ? address.port : 0, connections: () => n };
};

describe('engines beyond the process when they fail', () => {
  let broken: Awaited<ReturnType<typeof droppingServer>>;
  let platform: TestPlatform;
  beforeAll(async () => {
    broken = await droppingServer();
    platform = await startTestPlatform({
      env: {
        S3_ENDPOINT: `http://127.0.0.1:${broken.port}`,
        S3_ACCESS_KEY: 'k',
        S3_SECRET_KEY: 's',
        SMTP_URL: `smtp://127.0.0.1:${broken.port}`,
        GRPC_CALL_TIMEOUT_MS: '3000',
      },
    });
  });
  afterAll(async () => {
    await platform.close();
    broken.server.close();
  });

  it('answer 502 bad-gateway, then, after 5 failures, 503 without calling them (circuit open)', async () => {
    const { objects } = platform.kernel.engines;
    for (let i = 0; i < 5; i += 1)
      await expect(objects.put(`k${i}`, Buffer.from('x'), { contentType: 'text/plain' })).rejects.toMatchObject({
        status: 502,
        suffix: 'bad-gateway',
      });
    const before = broken.connections();
    await expect(objects.put('k6', Buffer.from('x'), { contentType: 'text/plain' })).rejects.toMatchObject({
      status: 503,
      suffix: 'service-unavailable',
    });
    expect(broken.connections()).toBe(before);
  });

  it('guard mail too, and leave ping unguarded for the health report', async () => {
    await expect(
      platform.kernel.engines.mail.send({ to: 'a@example.test', subject: 's', text: 't' }),
    ).rejects.toMatchObject({ status: 502 });
    await expect(platform.kernel.engines.mail.ping()).rejects.not.toMatchObject({ status: 503 });
  });
});

describe('a guarded engine that works', () => {
  let platform: TestPlatform;
  beforeAll(async () => {
    const bucket = `guard-${process.pid}-${Date.now()}`;
    const admin = new S3Client({
      endpoint: requireEnv('TEST_S3_ENDPOINT'),
      region: 'us-east-1',
      forcePathStyle: true,
      credentials: { accessKeyId: requireEnv('TEST_S3_ACCESS_KEY'), secretAccessKey: requireEnv('TEST_S3_SECRET_KEY') },
    });
    await admin.send(new CreateBucketCommand({ Bucket: bucket }));
    admin.destroy();
    platform = await startTestPlatform({
      env: {
        S3_ENDPOINT: requireEnv('TEST_S3_ENDPOINT'),
        S3_ACCESS_KEY: requireEnv('TEST_S3_ACCESS_KEY'),
        S3_SECRET_KEY: requireEnv('TEST_S3_SECRET_KEY'),
        S3_BUCKET: bucket,
      },
    });
  });
  afterAll(async () => platform.close());

  it('passes answers through, a missing object included, without counting them as failures', async () => {
    const { objects } = platform.kernel.engines;
    await objects.put('present', Buffer.from('hello'), { contentType: 'text/plain' });
    for (let i = 0; i < 7; i += 1)
      await expect(objects.get(`missing-${i}`)).rejects.toBeInstanceOf(ObjectNotFoundError);
    expect(await objects.head('present')).toMatchObject({ size: 5 });
  });
});
