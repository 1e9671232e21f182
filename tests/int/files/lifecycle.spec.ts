import { randomBytes, randomUUID } from 'node:crypto';
import sharp from 'sharp';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { filesContext } from '../../../commands/files/context';
import { sweepFiles } from '../../../commands/files/sweep';
import { PLATFORM_TENANT_ID } from '../../../domain/identity/constants';
import { AUDIT_TOPIC } from '../../../infra/audit';
import type { TestClock } from '../../support/clock';
import { offsetClock } from '../../support/clock';
import type { TestPlatform } from '../../support/platform';
import { startTestPlatform } from '../../support/platform';
import type { Body, FilesClient } from '../../support/files';
import {
  clamdEnv,
  eventually,
  fetchLink,
  filesClient,
  testBucket,
  topicEvents,
  uniqueTenant,
  waitForStatus,
} from '../../support/files';

/**
 * After the release: the trash and its 30-day window, deletion for good (objects removed, storage
 * recalculated, audited), the daily sweep (trash, orphans, stray staging objects), and one tenant
 * never reaching another's files by any path, id or link.
 */
const DAY = 86_400_000;
let p: TestPlatform;
let clock: TestClock;
const bucket = testBucket();
const startedAt = Date.now();
const tenantA = uniqueTenant('life-a');
let a: FilesClient;
let b: FilesClient;

beforeAll(async () => {
  clock = offsetClock();
  p = await startTestPlatform({
    services: ['files'],
    clock,
    env: { ...bucket.env, ...clamdEnv(), FILES_WORKER_POLL_MS: '50' },
  });
  a = filesClient(p.url, tenantA);
  b = filesClient(p.url, uniqueTenant('life-b'));
});
afterAll(async () => {
  await p?.close();
  await bucket.drop();
});
afterEach(() => clock.reset());

const available = async (
  client: FilesClient,
  bytes: Buffer,
  fields: Parameters<FilesClient['upload']>[1] = {},
): Promise<string> => {
  const answer = await client.upload(bytes, fields);
  expect(answer.status).toBe(201);
  await waitForStatus(client, answer.body.id, 'available');
  return answer.body.id;
};
const image = async (): Promise<string> => {
  const png = await sharp({ create: { width: 640, height: 480, channels: 3, background: '#c33' } })
    .png()
    .toBuffer();
  const id = await available(a, png, { bucket: 'assets', originalName: 'red.png' });
  await eventually(async () =>
    Object.keys((await a.get(`/files/${id}?meta=1`)).body.thumbnails).length === 2 ? true : undefined,
  );
  return id;
};
const keysOf = async (id: string) => (await bucket.keys()).filter((k) => k.includes(id));
const usage = async () => (await a.get('/files/usage')).body.storageBytes as number;
const sweep = () => sweepFiles(filesContext(p.kernel));
const filesEvents = async (id: string) =>
  (await topicEvents(p.kernel, 'platform.files.events', startedAt)).filter((e) => e.data.fileId === id);
const audited = (id: string, action: string) =>
  eventually(
    async () =>
      (await topicEvents(p.kernel, AUDIT_TOPIC, startedAt)).find(
        (e) => e.data?.entityId === id && e.data.action === action,
      ),
    20_000,
    `audit ${action}`,
  );

describe('a file moved to the trash', () => {
  let id: string;
  let link: string;
  beforeAll(async () => {
    id = await available(a, randomBytes(5000), { originalName: 'draft.bin' });
    link = (await a.get(`/files/${id}/url`)).body.url;
  });

  it('is gone for reads (404) but listed under status=deleted and still counted in storage', async () => {
    const before = await usage();
    expect((await a.del(`/files/${id}`)).status).toBe(204);
    expect((await a.get(`/files/${id}`)).body).toMatchObject({
      status: 404,
      type: expect.stringMatching(/\/file-not-found$/),
    });
    expect((await a.get('/files')).body.data.map((f: Body) => f.id)).not.toContain(id);
    const trash = (await a.get('/files?status=deleted')).body.data.find((f: Body) => f.id === id);
    expect(trash).toMatchObject({ status: 'deleted', deletedAt: expect.any(String), url: null });
    expect(await usage()).toBe(before);
    expect((await a.del(`/files/${id}`)).status).toBe(204);
  });

  it('takes its signed links with it at once', async () => {
    expect((await fetchLink(p.url, link)).status).toBe(404);
  });

  it('is restored within 30 days, and a restore of an available file is 400 file-not-deleted', async () => {
    clock.advance(29 * DAY);
    const restored = await a.post(`/files/${id}/restore`);
    expect(restored.status).toBe(200);
    expect(restored.body).toMatchObject({ id, status: 'available', deletedAt: null, url: expect.any(String) });
    expect((await a.post(`/files/${id}/restore`)).body).toMatchObject({
      status: 400,
      type: expect.stringMatching(/\/file-not-deleted$/),
    });
  });

  it('cannot be restored after 30 days: 410 file-restore-expired', async () => {
    expect((await a.del(`/files/${id}`)).status).toBe(204);
    clock.advance(30 * DAY + 60_000);
    expect((await a.post(`/files/${id}/restore`)).body).toMatchObject({
      status: 410,
      type: expect.stringMatching(/\/file-restore-expired$/),
    });
  });

  it('published files.file.deleted and files.file.restored with its size', async () => {
    const events = await eventually(async () => {
      const found = await filesEvents(id);
      return found.some((e) => e.type === 'files.file.restored') ? found : undefined;
    });
    expect(events.find((e) => e.type === 'files.file.deleted')!.data).toMatchObject({
      sizeBytes: 5000,
      tenantId: tenantA,
    });
    expect(events.find((e) => e.type === 'files.file.restored')!.data).toMatchObject({ sizeBytes: 5000 });
  });
});

describe('a file deleted for good', () => {
  it('loses its content and thumbnails in the store, its storage and its links, and is audited', async () => {
    const id = await image();
    expect(await keysOf(id)).toHaveLength(3); // content, icon_32, card_300
    const size = (await a.get(`/files/${id}?meta=1`)).body.size as number;
    const before = await usage();
    expect((await a.del(`/files/${id}/permanent`)).status).toBe(204);
    expect(await keysOf(id)).toEqual([]);
    expect(await usage()).toBe(before - size);
    expect((await a.get(`/files/${id}`)).status).toBe(404);
    expect((await a.get(`/files/${id}/thumbnail/icon_32`)).status).toBe(404);
    expect((await a.del(`/files/${id}`)).status).toBe(404);
    const record = await audited(id, 'files.file.permanent_deleted');
    expect(record.data).toMatchObject({
      tenantId: tenantA,
      actorId: 'u-uploader',
      before: { status: 'available', sizeBytes: size },
      meta: { reason: 'requested' },
    });
    const event = await eventually(async () =>
      (await filesEvents(id)).find((e) => e.type === 'files.file.permanent_deleted'),
    );
    expect(event.data).toMatchObject({ sizeBytes: size, reason: 'requested' });
  });

  it('may be deleted for good from the trash too', async () => {
    const id = await available(a, randomBytes(100));
    await a.del(`/files/${id}`);
    expect((await a.del(`/files/${id}/permanent`)).status).toBe(204);
    expect(await keysOf(id)).toEqual([]);
    expect((await a.get('/files?status=deleted')).body.data.map((f: Body) => f.id)).not.toContain(id);
  });
});

describe('the daily sweep', () => {
  it('deletes files left in the trash for more than 30 days, and audits it', async () => {
    const kept = await available(a, randomBytes(100));
    const old = await available(a, randomBytes(100));
    await a.del(`/files/${old}`);
    clock.advance(20 * DAY);
    await a.del(`/files/${kept}`);
    clock.advance(11 * DAY);
    expect((await sweep()).trashPurged).toBeGreaterThanOrEqual(1);
    expect(await keysOf(old)).toEqual([]);
    expect(await keysOf(kept)).toHaveLength(1);
    expect((await a.post(`/files/${kept}/restore`)).status).toBe(200);
    expect((await audited(old, 'files.file.permanent_deleted')).data).toMatchObject({
      actorId: 'system',
      meta: { reason: 'trash-expired' },
    });
  });

  it('marks avatars nothing refers to as orphans after 24 h and deletes them 30 days later; a referenced one stays', async () => {
    const png = await sharp({ create: { width: 64, height: 64, channels: 3, background: '#09c' } })
      .png()
      .toBuffer();
    const orphan = await available(a, png, { bucket: 'avatars', originalName: 'old-face.png' });
    const used = await available(a, png, { bucket: 'avatars', originalName: 'face.png' });
    const user = `u-${randomUUID()}`;
    await p.kernel.db.query(
      `INSERT INTO rm.iam_accounts (tenant_id, id, email, first_name, last_name, avatar_url, email_verified, status, created_at, updated_at, version)
      VALUES ($1, $2, $3, 'A', 'B', $4, true, 'active', now(), now(), 1)`,
      [PLATFORM_TENANT_ID, user, `${user}@x.test`, `https://api.example.test/v1/files/${used}`],
    );
    await p.kernel.db.query(
      `INSERT INTO rm.iam_members (tenant_id, user_id, role_ids, status, created_at, updated_at, version) VALUES ($1, $2, '{}', 'active', now(), now(), 1)`,
      [tenantA, user],
    );
    const document = await available(a, randomBytes(100), { bucket: 'documents' });

    clock.advance(DAY + 60_000);
    await sweep();
    const orphaned = await eventually(async () =>
      (await filesEvents(orphan)).find((e) => e.type === 'files.file.orphaned'),
    );
    expect(orphaned.data.fileId).toBe(orphan);
    expect((await filesEvents(used)).some((e) => e.type === 'files.file.orphaned')).toBe(false);
    expect((await filesEvents(document)).some((e) => e.type === 'files.file.orphaned')).toBe(false);

    clock.advance(31 * DAY);
    expect((await sweep()).orphansPurged).toBe(1);
    expect((await a.get(`/files/${orphan}`)).status).toBe(404);
    expect(await keysOf(orphan)).toEqual([]);
    expect((await a.get(`/files/${used}?meta=1`)).body.status).toBe('available');
    expect((await audited(orphan, 'files.orphan.deleted')).data).toMatchObject({ meta: { reason: 'orphaned' } });
  });

  it('removes staging objects no pending file owns, once older than the staging TTL', async () => {
    const stray = `_staging/${tenantA}/${randomUUID()}`;
    await p.kernel.engines.objects.put(stray, Buffer.from('cut-off upload'), {
      contentType: 'application/octet-stream',
    });
    await sweep();
    expect(await p.kernel.engines.objects.head(stray)).not.toBeNull();
    clock.advance(DAY + 60_000);
    expect((await sweep()).strayStagingObjects).toBe(1);
    expect(await p.kernel.engines.objects.head(stray)).toBeNull();
  });
});

describe('another tenant', () => {
  let id: string;
  let link: string;
  beforeAll(async () => {
    id = await image();
    link = (await a.get(`/files/${id}/url`)).body.url;
  });

  it('gets 404 for the file by id, meta, download, url, thumbnail, job and in its list', async () => {
    for (const path of [
      `/files/${id}`,
      `/files/${id}?meta=1`,
      `/files/${id}?download=1`,
      `/files/${id}/url`,
      `/files/${id}/thumbnail/icon_32`,
      `/files/${id}/thumbnail/avatar_64`,
      `/files/${id}/jobs/${randomUUID()}`,
    ]) {
      expect([path, (await b.get(path)).status]).toEqual([path, 404]);
    }
    expect((await b.get('/files')).body.data).toEqual([]);
  });

  it('gets 404 when it deletes, restores, processes or deletes it for good, and it stays intact', async () => {
    expect((await b.del(`/files/${id}`)).status).toBe(404);
    expect((await b.del(`/files/${id}/permanent`)).status).toBe(404);
    expect((await b.post(`/files/${id}/restore`)).status).toBe(404);
    expect((await b.post(`/files/${id}/process`, { operations: [{ type: 'rotate', degrees: 90 }] })).status).toBe(404);
    expect((await a.get(`/files/${id}?meta=1`)).body.status).toBe('available');
  });

  it('cannot turn a link of the file into one of its own tenant, or stretch it; a link expires', async () => {
    const forged = new URL(link);
    forged.searchParams.set('tenant', 'life-b-someone');
    expect((await fetchLink(p.url, forged.toString())).status).toBe(403);
    const stretched = new URL(link);
    stretched.searchParams.set('expires', String(Number(stretched.searchParams.get('expires')) + 3600));
    expect((await fetchLink(p.url, stretched.toString())).status).toBe(403);
    const thumbnail = new URL(link);
    thumbnail.searchParams.set('variant', 'icon_32');
    expect((await fetchLink(p.url, thumbnail.toString())).status).toBe(403);
    expect((await fetchLink(p.url, link)).status).toBe(200);
    clock.advance(301_000);
    expect((await fetchLink(p.url, link)).status).toBe(403);
  });
});
