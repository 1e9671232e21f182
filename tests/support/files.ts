import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { DeleteBucketCommand, DeleteObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { PLATFORM_TENANT_ID } from '../../domain/identity/constants';
import type { Kernel } from '../../infra/kernel';
import type { ServiceParts } from '../../infra/services';
import type { Queryable } from '../../infra/postgres/db';
import { mergeServiceParts } from '../../infra/services';
import { identityPeople } from '../../commands/identity/people';
import identityProjections from '../../projections/identity';
import filesProjections from '../../projections/files';
import filesRead from '../../read-api/files';
import filesWrite from '../../write-api/files';
import filesWorkers from '../../workers/files';
import { testToken } from './auth';
import { requireEnv } from './env';
import { pollUntil } from './poll';

/** the files service as discovery finds it, with identity's read models (the Owners told about malware, avatar references) */
export const filesServices: ServiceParts = mergeServiceParts({
  write: [filesWrite],
  read: [filesRead],
  projections: [...filesProjections.projections, ...identityProjections.projections],
  people: identityPeople,
  workers: [filesWorkers],
});

export const FILES_PERMISSIONS = ['files.read', 'files.write', 'files.delete'];

// The EICAR anti-virus test file, kept as hex so this file is not itself "infected".
export const EICAR = Buffer.from(
  '58354f2150254041505b345c505a58353428505e2937434329377d2445494341522d5354414e444152442d414e544956495255532d544553542d46494c452124482b482a',
  'hex',
);

/** a bucket of its own on the test S3Proxy for one suite: created by the platform at start (S3_BUCKET), emptied and removed by drop() */
export const testBucket = () => {
  const name = `files-test-${process.pid}-${randomBytes(4).toString('hex')}`;
  const client = () =>
    new S3Client({
      endpoint: requireEnv('TEST_S3_ENDPOINT'),
      region: process.env.TEST_S3_REGION || 'us-east-1',
      forcePathStyle: true,
      credentials: { accessKeyId: requireEnv('TEST_S3_ACCESS_KEY'), secretAccessKey: requireEnv('TEST_S3_SECRET_KEY') },
    });
  return {
    name,
    env: {
      S3_ENDPOINT: requireEnv('TEST_S3_ENDPOINT'),
      S3_ACCESS_KEY: requireEnv('TEST_S3_ACCESS_KEY'),
      S3_SECRET_KEY: requireEnv('TEST_S3_SECRET_KEY'),
      S3_REGION: process.env.TEST_S3_REGION || 'us-east-1',
      S3_BUCKET: name,
    },
    /** every key in the bucket */
    async keys(): Promise<string[]> {
      const s3 = client();
      try {
        const keys: string[] = [];
        let token: string | undefined;
        do {
          const page = await s3.send(new ListObjectsV2Command({ Bucket: name, ContinuationToken: token }));
          keys.push(...(page.Contents ?? []).map((o) => o.Key!));
          token = page.NextContinuationToken;
        } while (token);
        return keys;
      } finally {
        s3.destroy();
      }
    },
    async drop(): Promise<void> {
      const s3 = client();
      try {
        for (const key of await this.keys()) await s3.send(new DeleteObjectCommand({ Bucket: name, Key: key }));
        await s3.send(new DeleteBucketCommand({ Bucket: name })).catch(() => undefined);
      } finally {
        s3.destroy();
      }
    },
  };
};

/** the test clamd, or a TCP proxy in front of it (a test that cuts the scanner off) */
export const clamdEnv = (port = Number(requireEnv('TEST_CLAMD_PORT'))) => ({
  CLAMD_HOST: requireEnv('TEST_CLAMD_HOST'),
  CLAMD_PORT: String(port),
});

/** a parsed response body: tests read whatever fields they check */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- response bodies are checked field by field
export type Body = any;
export interface Answer {
  status: number;
  body: Body;
  headers: Headers;
  text: string;
}

export interface UploadFields {
  bucket?: string;
  originalName?: string;
  mimeType?: string;
  meta?: string;
  /** the name sent with the file part (the browser's file name) */
  filename?: string;
}

const parse = async (res: Response): Promise<Answer> => {
  const text = await res.text();
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = text;
  }
  return { status: res.status, body, headers: res.headers, text };
};

/** an HTTP client of the files API as one user of one tenant */
export const filesClient = (
  baseUrl: string,
  tenantId: string,
  userId = 'u-uploader',
  permissions = FILES_PERMISSIONS,
) => {
  const token = testToken(tenantId, userId, permissions);
  const auth = { authorization: `Bearer ${token}` };
  const call = async (
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<Answer> =>
    parse(
      await fetch(`${baseUrl}/v1${path}`, {
        method,
        redirect: 'manual',
        headers: { ...auth, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
        body: body === undefined ? undefined : JSON.stringify(body),
      }),
    );
  const form = (bytes: Buffer | Blob, fields: UploadFields) => {
    const data = new FormData();
    for (const name of ['bucket', 'originalName', 'mimeType', 'meta'] as const) {
      const value =
        name === 'bucket'
          ? (fields.bucket ?? 'documents')
          : name === 'originalName'
            ? (fields.originalName ?? 'report.bin')
            : fields[name];
      if (value !== undefined) data.append(name, value);
    }
    data.append('file', bytes instanceof Blob ? bytes : new Blob([bytes]), fields.filename ?? 'upload.bin');
    return data;
  };
  return {
    token,
    auth,
    call,
    get: (path: string, headers?: Record<string, string>) => call('GET', path, undefined, headers),
    post: (path: string, body?: unknown) => call('POST', path, body ?? {}),
    del: (path: string) => call('DELETE', path),
    /** POST /files/upload with multipart/form-data built by fetch */
    upload: async (bytes: Buffer | Blob, fields: UploadFields = {}): Promise<Answer> =>
      parse(await fetch(`${baseUrl}/v1/files/upload`, { method: 'POST', headers: auth, body: form(bytes, fields) })),
    form,
  };
};
export type FilesClient = ReturnType<typeof filesClient>;

/** polls until check returns a value (not undefined), or fails after timeoutMs */
export const eventually = async <T>(
  check: () => Promise<T | undefined>,
  timeoutMs = 20_000,
  what = 'the condition',
): Promise<T> => (await pollUntil(check, (value) => value !== undefined, { timeoutMs, what })) as T;

/** waits until the file's status (as the tenant's list shows it) is one of these */
export const statusOf = async (client: FilesClient, fileId: string): Promise<string | null> => {
  for (const status of ['available', 'pending_scan', 'rejected', 'deleted']) {
    const page = await client.get(`/files?status=${status}&page_size=100`);
    if ((page.body.data as { id: string }[]).some((f) => f.id === fileId)) return status;
  }
  return null;
};

export const waitForStatus = (
  client: FilesClient,
  fileId: string,
  wanted: string,
  timeoutMs = 20_000,
): Promise<string> =>
  eventually(
    async () => ((await statusOf(client, fileId)) === wanted ? wanted : undefined),
    timeoutMs,
    `file ${fileId} to be ${wanted}`,
  );

export const uniqueTenant = (label: string): string => `${label}-${randomUUID()}`;

/** makes userId an active Owner of the tenant in identity's read models (whom an infected upload is reported to) */
export const seedOwner = async (q: Queryable, tenantId: string, userId: string, email: string): Promise<void> => {
  const roleId = `owner-role-${tenantId}`;
  await q.query(
    `INSERT INTO rm.iam_roles (tenant_id, id, name, description, permissions, built_in, created_by, created_at, updated_at, version)
    VALUES ($1, $2, 'Owner', 'the tenant owner', '{}', true, 'system', now(), now(), 1) ON CONFLICT DO NOTHING`,
    [tenantId, roleId],
  );
  await q.query(
    `INSERT INTO rm.iam_accounts (tenant_id, id, email, first_name, last_name, email_verified, status, created_at, updated_at, version)
    VALUES ($1, $2, $3, 'Olga', 'Owner', true, 'active', now(), now(), 1) ON CONFLICT DO NOTHING`,
    [PLATFORM_TENANT_ID, userId, email],
  );
  await q.query(
    `INSERT INTO rm.iam_members (tenant_id, user_id, role_ids, status, created_at, updated_at, version)
    VALUES ($1, $2, ARRAY[$3], 'active', now(), now(), 1) ON CONFLICT DO NOTHING`,
    [tenantId, userId, roleId],
  );
};

/** the events of a topic published since `since` (the shared Kafka holds every run's) */
export const topicEvents = async (
  kernel: Kernel,
  topic: string,
  since: number,
): Promise<{ type: string; tenantId: string; data: Body }[]> => {
  const log = kernel.log;
  const events: { type: string; tenantId: string; data: Body }[] = [];
  const from = await log.offsetsForTime(topic, since);
  for (let p = 0; p < (await log.partitionsOf(topic)); p += 1) {
    for (let offset = from[p] ?? 0; ;) {
      const records = await log.read(topic, p, offset, 1000);
      if (records.length === 0) break;
      // the Event's payload (spec 002), named data as the event store calls it
      events.push(
        ...records.map((r) => {
          const e = JSON.parse(r.value) as { type: string; tenantId: string; payload: Body };
          return { type: e.type, tenantId: e.tenantId, data: e.payload };
        }),
      );
      offset = records[records.length - 1]!.offset + 1;
    }
  }
  return events;
};

/** a signed link as the platform gave it, fetched from the test's address (all-in-one tests have no public root URL) */
export const fetchLink = (baseUrl: string, link: string, init?: RequestInit): Promise<Response> => {
  const url = new URL(link);
  return fetch(`${baseUrl}${url.pathname}${url.search}`, { redirect: 'manual', ...init });
};

/** a body sent without Content-Length (chunked), so only the limit measured while streaming can refuse it */
export const chunked = (bytes: Buffer, chunkSize = 64 * 1024): ReadableStream<Uint8Array> => {
  let at = 0;
  return new ReadableStream({
    pull(controller) {
      if (at >= bytes.length) return controller.close();
      controller.enqueue(new Uint8Array(bytes.subarray(at, at + chunkSize)));
      at += chunkSize;
    },
  });
};

/** a multipart body built by hand (fields, then the file), to stream it or send odd names */
export const multipartBody = (
  fields: Record<string, string>,
  file: Buffer,
  filename = 'upload.bin',
): { body: Buffer; contentType: string } => {
  const boundary = `----files-test-${randomBytes(8).toString('hex')}`;
  const parts = Object.entries(fields).map(([name, value]) =>
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`),
  );
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\nContent-Type: application/octet-stream\r\n\r\n`,
  );
  return {
    body: Buffer.concat([...parts, head, file, Buffer.from(`\r\n--${boundary}--\r\n`)]),
    contentType: `multipart/form-data; boundary=${boundary}`,
  };
};

/** resident memory of a process in bytes (Linux: VmRSS of /proc/<pid>/status) */
export const rssOf = (pid: number): number => {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1] ?? 0) * 1024;
};

/**
 * The largest growth of resident memory of the given processes above their level before, sampled
 * every 20 ms while `work` runs: a bound on what the work held in memory at once.
 */
export const peakGrowth = async <T>(
  pids: Record<string, number>,
  work: () => Promise<T>,
): Promise<{ result: T; growth: Record<string, number> }> => {
  const before = Object.fromEntries(Object.entries(pids).map(([role, pid]) => [role, rssOf(pid)]));
  const peak = { ...before };
  const timer = setInterval(() => {
    for (const [role, pid] of Object.entries(pids)) peak[role] = Math.max(peak[role]!, rssOf(pid));
  }, 20);
  try {
    const result = await work();
    for (const [role, pid] of Object.entries(pids)) peak[role] = Math.max(peak[role]!, rssOf(pid));
    return { result, growth: Object.fromEntries(Object.keys(pids).map((role) => [role, peak[role]! - before[role]!])) };
  } finally {
    clearInterval(timer);
  }
};

/**
 * Content that is never whole in memory: `size` pseudo-random bytes made 64 KB at a time (a hash
 * chain from `seed`), with their SHA-256 known once the stream has ended.
 */
export const generatedContent = (size: number, seed = 'files') => {
  const digest = createHash('sha256');
  let made = 0;
  let block = createHash('sha256').update(seed).digest();
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (made >= size) {
        controller.close();
        return;
      }
      const chunk = Buffer.allocUnsafe(Math.min(65_536, size - made));
      for (let at = 0; at < chunk.length; at += 32) {
        block = createHash('sha256').update(block).digest();
        block.copy(chunk, at, 0, Math.min(32, chunk.length - at));
      }
      digest.update(chunk);
      made += chunk.length;
      controller.enqueue(new Uint8Array(chunk));
    },
  });
  return { stream, sha256: () => digest.digest('hex') };
};

/** POST /files/upload of generated content, streamed (chunked: no Content-Length), the multipart framing around it */
export const streamUpload = async (
  baseUrl: string,
  auth: Record<string, string>,
  size: number,
  fields: Record<string, string> = {},
) => {
  const boundary = `----files-test-${randomBytes(8).toString('hex')}`;
  const content = generatedContent(size);
  const text = (s: string) => new TextEncoder().encode(s);
  const all = { bucket: 'documents', originalName: 'large.bin', ...fields };
  const head =
    Object.entries(all)
      .map(([name, value]) => `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`)
      .join('') +
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="large.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`;
  const reader = content.stream.getReader();
  let stage: 'head' | 'body' | 'done' = 'head';
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (stage === 'head') {
        stage = 'body';
        controller.enqueue(text(head));
        return;
      }
      if (stage === 'done') return;
      const next = await reader.read();
      if (!next.done) {
        controller.enqueue(next.value);
        return;
      }
      stage = 'done';
      controller.enqueue(text(`\r\n--${boundary}--\r\n`));
      controller.close();
    },
  });
  const res = await fetch(`${baseUrl}/v1/files/upload`, {
    method: 'POST',
    headers: { ...auth, 'content-type': `multipart/form-data; boundary=${boundary}` },
    body,
    duplex: 'half',
  });
  return { answer: await parse(res), sha256: content.sha256() };
};

/** the SHA-256 and length of an answer's body, read as it streams */
export const digestOf = async (res: Response): Promise<{ sha256: string; size: number }> => {
  const digest = createHash('sha256');
  let size = 0;
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    digest.update(chunk);
    size += chunk.length;
  }
  return { sha256: digest.digest('hex'), size };
};
