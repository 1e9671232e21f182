import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../../gateway/app';
import { testToken } from '../../support/auth';
import type { BodyFault, FaultOutcome } from '../../support/faulty-sender';
import { sendFaulty } from '../../support/faulty-sender';
import type { TestPlatform } from '../../support/platform';
import { startTestPlatform } from '../../support/platform';
import type { TableRoute } from '../../support/route-table';
import { BODY_METHODS, routeTable } from '../../support/route-table';
import { watchProcessErrors } from '../../support/process-errors';
import type { LogLine } from '../../support/split';

/**
 * DESIGN.md mechanism 11: no request, however malformed, ends the process. Every route of a
 * platform with every service that takes a body (read from the router, not listed by hand) is
 * sent bodies that go wrong (tests/support/faulty-sender.ts) — cut half-way, truncated on the wire,
 * reset mid-body, beyond the limits — as JSON and, where the route reads forms, as multipart, while
 * another tenant keeps reading and writing; every process must still be serving at the end.
 */
const BODY_LIMIT = 16 * 1024;
const UPLOAD_LIMIT_MB = 0.25;
const UPLOAD_LIMIT = UPLOAD_LIMIT_MB * 1024 * 1024;
/** cases sent at once: small groups, so that a loaded 2-core machine keeps up */
const GROUP = 12;

const attacker = testToken('malformed-attacker', 'mallory', ['platform.*']);
const bystander = testToken('malformed-bystander', 'bob', ['money.*']);

let p: TestPlatform;
const watched = watchProcessErrors();

beforeAll(async () => {
  p = await startTestPlatform({
    services: ['platform'],
    captureLogs: true,
    env: {
      BODY_LIMIT_BYTES: String(BODY_LIMIT),
      FILES_MAX_IMAGE_SIZE_MB: String(UPLOAD_LIMIT_MB),
      FILES_MAX_DOCUMENT_SIZE_MB: String(UPLOAD_LIMIT_MB),
    },
  });
}, 240_000); // every service in every role: the split roles take long to start on a loaded machine
afterAll(async () => {
  await p?.close();
  watched.stop();
});

/** the route table of the platform under test (split: the same modules mounted in this process, never listening) */
const bodyRoutes = async (): Promise<TableRoute[]> => {
  let table: TableRoute[];
  if (p.app) table = routeTable(p.app);
  else {
    const app = await buildApp(p.kernel, { write: true, read: true });
    try {
      table = routeTable(app);
    } finally {
      await app.close();
    }
  }
  return table.filter((r) => BODY_METHODS.has(r.method));
};

/** a path of the route: every parameter a well-formed id */
const pathOf = (url: string) => url.replace(/:[A-Za-z]+/g, '0190a8f4-7c1e-7000-8000-000000000001');

const jsonBody = (size: number) => Buffer.from(JSON.stringify({ name: 'n'.repeat(size), amount: 1, currency: 'USD' }));

const json = { 'content-type': 'application/json', authorization: `Bearer ${attacker}` };

const BOUNDARY = '----malformed-bodies-boundary';
const part = (name: string, value: string | Buffer, filename?: string) =>
  Buffer.concat([
    Buffer.from(
      `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"${filename ? `; filename="${filename}"` : ''}\r\n` +
        `${filename ? 'Content-Type: application/octet-stream\r\n' : ''}\r\n`,
    ),
    Buffer.from(value),
    Buffer.from('\r\n'),
  ]);

/**
 * A form as an upload sends it: the text fields, then the part named file (beyond the upload
 * limit when oversized). Cut: a file part the route does not read follows the fields, and the form
 * stops inside it, the HTTP message itself whole.
 */
const form = (fields: Record<string, string>, fault: BodyFault): Buffer => {
  const head = Buffer.concat(Object.entries(fields).map(([name, value]) => part(name, value)));
  if (fault === 'cut') {
    const skipped = part('extra', Buffer.alloc(8 * 1024, 1), 'extra.bin');
    return Buffer.concat([head, skipped.subarray(0, skipped.length / 2)]);
  }
  const file = Buffer.alloc(fault === 'oversized-chunked' ? UPLOAD_LIMIT + 64 * 1024 : 32 * 1024, 7);
  return Buffer.concat([head, part('file', file, 'upload.bin'), Buffer.from(`--${BOUNDARY}--\r\n`)]);
};

interface Case {
  route: string;
  media: 'json' | 'multipart';
  fault: BodyFault;
  send: () => Promise<FaultOutcome>;
}

const presign = async (sizeBytes: number) => {
  const res = await p.http('/v1/files/presign', {
    method: 'POST',
    headers: json,
    body: JSON.stringify({
      bucket: 'documents',
      originalName: 'a.bin',
      mimeType: 'application/octet-stream',
      sizeBytes,
    }),
  });
  expect(res.status).toBe(200);
  return (await res.json()) as { uploadUrl: string; fields: Record<string, string> };
};

let target: Promise<string> | null = null;
/** where presigned forms are posted (the local object store's form target) */
const presignTarget = () => (target ??= presign(1).then((form) => new URL(form.uploadUrl).pathname));

/** the routes that read forms: an empty form is not refused for its media type (415) */
const readsForms = async (method: string, path: string): Promise<boolean> => {
  const res = await p.http(path, {
    method,
    headers: { authorization: `Bearer ${attacker}`, 'content-type': `multipart/form-data; boundary=${BOUNDARY}` },
    body: `--${BOUNDARY}--\r\n`,
  });
  await res.arrayBuffer();
  return res.status !== 415;
};

const casesFor = async (route: TableRoute): Promise<Case[]> => {
  const path = pathOf(route.url);
  const name = `${route.method} ${route.url}`;
  const cases: Case[] = (['cut', 'truncated', 'aborted', 'oversized', 'oversized-chunked'] as const).map((fault) => ({
    route: name,
    media: 'json',
    fault,
    send: () => {
      const body = jsonBody(fault.startsWith('oversized') ? BODY_LIMIT + 1024 : 2048);
      return sendFaulty(p.url, {
        method: route.method,
        path,
        headers: json,
        body: fault === 'cut' ? body.subarray(0, body.length / 2) : body,
        fault,
      });
    },
  }));
  if (!(await readsForms(route.method, path))) return cases;
  for (const fault of ['cut', 'truncated', 'aborted', 'oversized-chunked'] as const) {
    cases.push({
      route: name,
      media: 'multipart',
      fault,
      send: async () => {
        // a presigned form's target gets the signed fields (the form of a 10-byte file), any other form route an upload's
        const local = route.url === (await presignTarget());
        const fields = local ? (await presign(10)).fields : { bucket: 'documents', originalName: 'a.bin' };
        const body = form(fields, fault);
        return sendFaulty(p.url, {
          method: route.method,
          path,
          headers: { authorization: `Bearer ${attacker}`, 'content-type': `multipart/form-data; boundary=${BOUNDARY}` },
          body,
          fault,
        });
      },
    });
  }
  return cases;
};

/** the bystander's traffic until stopped: a read and a small write of its own, each answered 2xx */
const bystanderTraffic = () => {
  const failures: string[] = [];
  let succeeded = 0;
  let running = true;
  const auth = { authorization: `Bearer ${bystander}` };
  const loop = (async () => {
    for (let i = 0; running; i += 1) {
      try {
        const read = await p.http('/v1/wallets?page_size=1', { headers: auth });
        await read.arrayBuffer();
        if (read.status !== 200) failures.push(`GET /v1/wallets → ${read.status}`);
        else succeeded += 1;
        const write = await p.http('/v1/audit', {
          method: 'POST',
          headers: { ...auth, 'content-type': 'application/json' },
          body: JSON.stringify({ action: 'invoice.payment.captured', entityType: 'invoice', entityId: `i-${i}` }),
        });
        const text = await write.text();
        if (write.status !== 202) failures.push(`POST /v1/audit → ${write.status} ${text}`);
        else succeeded += 1;
      } catch (error) {
        failures.push(`bystander request failed: ${String(error)}`);
      }
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      return { failures, succeeded };
    },
  };
};

/** when a log line was written: epoch ms (pino's default) or an ISO time (the roles' logger) */
const timeOf = (line: LogLine): number => (typeof line.time === 'number' ? line.time : Date.parse(String(line.time)));

/** a process of the platform still running (not exited, not a zombie waiting to be reaped) */
const running = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  return !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'));
};

describe('every route that takes a body, sent bodies that go wrong on the wire', () => {
  it('keeps every process serving, and another tenant served meanwhile', async () => {
    const routes = await bodyRoutes();
    // the platform with every service has them all: uploads, presigned forms, webhooks, the data layer
    expect(routes.length).toBeGreaterThan(60);
    for (const url of [
      '/v1/files/upload',
      '/v1/objects/local',
      '/v1/billing/webhooks/:provider',
      '/v1/data/:module/:model',
    ])
      expect(routes.map((r) => r.url)).toContain(url);
    const pidsBefore = { ...p.pids };

    const sendingSince = Date.now();
    const traffic = bystanderTraffic();
    const cases: Case[] = [];
    for (const route of routes) cases.push(...(await casesFor(route)));
    const outcomes: { c: Case; outcome: FaultOutcome }[] = [];
    for (let at = 0; at < cases.length; at += GROUP)
      outcomes.push(
        ...(await Promise.all(cases.slice(at, at + GROUP).map(async (c) => ({ c, outcome: await c.send() })))),
      );
    const { failures, succeeded } = await traffic.stop();

    const describeCase = ({ c, outcome }: { c: Case; outcome: FaultOutcome }) =>
      `${c.route} ${c.media} ${c.fault} → ${outcome.hung ? 'no answer, connection kept' : (outcome.status ?? 'closed')}`;
    const uploads = new Set(['POST /v1/files/upload', 'POST /v1/objects/local']);
    expect({
      // the same processes, all still running, nothing reached their top level or was logged as an error
      pids: p.pids,
      running: Object.entries(p.pids).filter(([, pid]) => !running(pid)),
      live: (await p.http('/live')).status,
      processErrors: watched.errors(),
      errorLines: p
        .logLines()
        // while the bodies were sent; the Kafka client's own complaints (a rebalance) are no request's doing
        .filter((l) => l.level >= 50 && timeOf(l) >= sendingSince - 1000 && l.logger !== 'kafkajs')
        .map(
          (l) =>
            `${String(l.name)}: ${l.msg} ${JSON.stringify({ ...l, err: undefined, time: undefined })} ${JSON.stringify(l.err)}`,
        ),
      // the other tenant was served all along
      bystanderFailures: failures.slice(0, 5),
      // a body the platform refuses is the client's mistake: never a 5xx, never a connection left hanging
      serverErrorsOrHangs: outcomes
        .filter(({ outcome }) => outcome.hung || (outcome.status ?? 0) >= 500)
        .map(describeCase),
      // a body beyond a limit is answered (413, or an earlier refusal of what it is)
      oversizedUnanswered: outcomes
        .filter(({ c, outcome }) => c.fault.startsWith('oversized') && outcome.status === null)
        .map(describeCase),
      // and the uploads measure theirs while the file streams
      oversizedUploads: outcomes
        .filter(({ c }) => uploads.has(c.route) && c.media === 'multipart' && c.fault === 'oversized-chunked')
        .map(({ c, outcome }) => `${c.route} ${outcome.status}`),
    }).toEqual({
      pids: pidsBefore,
      running: [],
      live: 200,
      processErrors: [],
      errorLines: [],
      bystanderFailures: [],
      serverErrorsOrHangs: [],
      oversizedUnanswered: [],
      oversizedUploads: ['POST /v1/files/upload 413', 'POST /v1/objects/local 413'],
    });
    expect(succeeded).toBeGreaterThan(0);
  });
});
