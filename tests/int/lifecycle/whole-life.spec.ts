import type { PlatformClient, Problem } from '@platform/sdk';
import { createPlatformClient, formData, idempotencyKey } from '@platform/sdk';
import type { paths as FilesPaths } from '@platform/sdk/generated/files';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPlatformOwner } from '../../../commands/identity/account';
import { currentSubscriptionOf, escalate, eventually, login, operatorPlan } from '../../support/billing-http';
import { crmManifest } from '../../support/data';
import type { Receiver } from '../../support/events';
import { EVENTS_TEST_ENV, startReceiver, uniqueSlug } from '../../support/events';
import { clamdEnv, testBucket } from '../../support/files';
import type { IdentityPlatform, Member, Registered } from '../../support/identity';
import { addMember, PASSWORD, registerUser, startIdentityPlatform, uniqueEmail } from '../../support/identity';
import { solidPng } from '../../support/images';

/**
 * One tenant's whole life on one platform with every service (issue 23), in either topology:
 * sign-up and trial, members, a module installed and records created, files, bus events, a
 * notification, money — then unpaid: past_due → suspended → terminated with the clock, and the
 * erasure phase by phase, each service's holdings checked gone, the ledger kept and the audit
 * anonymized. Beside it a second tenant, terminated the same day and recovered before anything
 * was erased, has everything back; a third, paying nothing on the free plan, is untouched
 * throughout. Small workloads: one record, one file, one event of each. Every request goes
 * through the typed SDK (sdk/, generated from the platform's OpenAPI documents): a path, body or
 * answer the documents do not describe fails the type check, and an answer they describe wrongly
 * fails here.
 */
const DAY = 86_400_000;
const HOUR = 3_600_000;

let p: IdentityPlatform;
let bucket: ReturnType<typeof testBucket>;
let receiver: Receiver;
let ownerEmail: string;
/** the bus module's key: it acts for a tenant that installed it; its topic and event type */
let busKey: string;
let busTopic: string;
let busType: string;

/** the typed SDK for a bearer (an access token or a module key), with headers of its own */
const sdk = (token: string, headers: Record<string, string> = {}) =>
  createPlatformClient({ baseUrl: p.url, token, headers });
/** the bus module's key acting for one tenant that installed it */
const asModule = (tenantId: string) => sdk(busKey, { 'x-module-tenant': tenantId });
/** a fresh Idempotency-Key, for the operations whose documents declare one */
const keyed = () => ({ 'Idempotency-Key': idempotencyKey() });

/** what an SDK call resolves to: `data` on a 2xx, `error` (a problem) otherwise */
type Answer<D = unknown> = { data?: D; error?: Problem | string; response: Response };
const bodyOf = (res: Answer) => JSON.stringify(res.data ?? res.error);
/** the answer's typed body, once its status is the one expected */
const ok = <D>(res: Answer<D>, status: number, what: string): D => {
  expect(res.response.status, `${what}: ${bodyOf(res)}`).toBe(status);
  return res.data as D;
};
/** the answer's problem, once its status is the one expected */
const refused = (res: Answer, status: number, what: string): Problem => {
  expect(res.response.status, `${what}: ${bodyOf(res)}`).toBe(status);
  return res.error as Problem;
};
const platformOwner = () => login(p, ownerEmail);
const count = async (sql: string, params: unknown[]): Promise<number> =>
  Number((await p.kernel.db.query<{ n: string }>(`SELECT count(*)::text AS n FROM ${sql}`, params)).rows[0]!.n);

interface Tenant {
  owner: Registered;
  token: string;
  subscriptionId: string;
  member?: Member;
  /** the ids of what it holds, set as it creates them */
  contactId: string;
  fileId: string;
  walletId: string;
  subscriptionOnBus: string;
}
const tenant = (): Tenant => ({
  owner: undefined as unknown as Registered,
  token: '',
  subscriptionId: '',
  contactId: '',
  fileId: '',
  walletId: '',
  subscriptionOnBus: '',
});
const a = tenant(); // lives its whole life and is terminated
const b = tenant(); // terminated the same day, recovered before anything was erased
const c = tenant(); // on the free plan, never late: untouched throughout
const relogin = async (t: Tenant) => {
  t.token = await login(p, t.owner.email);
  return t.token;
};

/** the tenant's holdings, service by service, read in the shared database */
const holdings = async (tenantId: string) => ({
  records: await count('module_crm.contacts WHERE tenant_id = $1', [tenantId]),
  recordStreams: await count(`es.streams WHERE tenant_id = $1 AND stream_id LIKE 'data:%'`, [tenantId]),
  installations: await count('modules.installations WHERE tenant_id = $1', [tenantId]),
  busSubscriptions: await count('rm.events_subscriptions WHERE tenant_id = $1', [tenantId]),
  busRecords: await count('events.records WHERE tenant_id = $1', [tenantId]),
  deadLetters: await count('events.dlq WHERE tenant_id = $1', [tenantId]),
  notifications: await count('rm.notify_notifications WHERE tenant_id = $1', [tenantId]),
  files: await count('rm.files_files WHERE tenant_id = $1', [tenantId]),
  /** the files service's objects (contents, thumbnails, staged uploads); the audit archives are the audit's, kept */
  objects: (await bucket.keys()).filter((k) => k.startsWith(`${tenantId}/`) || k.startsWith(`_staging/${tenantId}/`)),
  members: await count('rm.iam_members WHERE tenant_id = $1', [tenantId]),
  sessions: await count('identity.refresh_tokens WHERE tenant_id = $1', [tenantId]),
  wallets: await count('rm.money_wallets WHERE tenant_id = $1', [tenantId]),
  journal: await count('rm.money_transactions WHERE tenant_id = $1', [tenantId]),
});
type Holdings = Awaited<ReturnType<typeof holdings>>;
const before: Record<string, Holdings> = {};
/** the resource a 402 names (spec 001's resource types) for each counter of GET /billing/usage */
const PROBLEM_RESOURCE = {
  users: 'users',
  records: 'records',
  storageBytes: 'storage_bytes',
  eventsPerDay: 'events_per_day',
  modules: 'modules',
} as const;

/** moves the clock and runs the escalation worker (as the workers role does, on the shared clock) */
const advance = async (ms: number) => {
  p.clock.advance(ms);
  await escalate(p.kernel);
  await escalate(p.kernel);
};
const statusOf = async (t: Tenant): Promise<{ status: string; phase: string | null }> => {
  const res = ok(
    await sdk(await platformOwner()).billing.GET('/v1/admin/tenants/{id}/termination-status', {
      params: { path: { id: t.owner.tenantId } },
    }),
    200,
    'termination status',
  );
  return { status: res.status, phase: res.phase };
};
/** the escalation worker runs until the termination reaches the phase (the services confirm on the log meanwhile) */
const untilPhase = (t: Tenant, phase: string) =>
  eventually(
    async () => {
      await escalate(p.kernel);
      return (await statusOf(t)).phase;
    },
    (seen) => seen === phase,
    30_000,
    `phase ${phase}`,
  );

type Bucket = FilesPaths['/v1/files/upload']['post']['requestBody']['content']['multipart/form-data']['bucket'];
/** an upload through the gateway (multipart, the file last): its answer */
const postUpload = (t: Tenant, bytes: Buffer, bucketName: Bucket, name: string) =>
  sdk(t.token).files.POST('/v1/files/upload', {
    body: { bucket: bucketName, originalName: name, file: new File([bytes], name) },
    bodySerializer: formData,
  });
/** GET /files/{id}?meta=1: the File object, or the answer's status when it is none */
const fileMeta = async (token: string, id: string) => {
  const { data, response } = await sdk(token).files.GET('/v1/files/{id}', {
    params: { path: { id }, query: { meta: '1' } },
  });
  return typeof data === 'object' ? data : { status: response.status, thumbnails: undefined };
};
/** an upload waited for until it is scanned and available; its id */
const upload = async (t: Tenant, bytes: Buffer, bucketName: Bucket, name: string): Promise<string> => {
  const { id } = ok(await postUpload(t, bytes, bucketName, name), 201, 'upload');
  await eventually(
    async () => (await fileMeta(t.token, id)).status,
    (status) => status === 'available',
    30_000,
    'file available',
  );
  return id;
};

/** the platform owner installs a module for the tenant */
const install = (owner: PlatformClient, module: string, t: Tenant) =>
  owner.data.POST('/v1/modules/{id}/installations', {
    params: { path: { id: module } },
    body: { tenantId: t.owner.tenantId },
  });
/** a record of the crm module (its columns are the module's, untyped in the documents) */
const createRecord = (token: string, model: 'contacts' | 'notes', record: Record<string, unknown>) =>
  sdk(token).data.POST('/v1/data/{module}/{model}', {
    params: { path: { module: 'crm', model }, header: keyed() },
    body: record,
  });
const readRecord = (token: string, id: string) =>
  sdk(token).data.GET('/v1/data/{module}/{model}/{id}', { params: { path: { module: 'crm', model: 'contacts', id } } });
const credit = (t: Tenant, amount: number) =>
  sdk(t.token).money.POST('/v1/wallets/{id}/credit', {
    params: { path: { id: t.walletId }, header: keyed() },
    body: { amount, currency: 'USD' },
  });
const recover = (owner: PlatformClient, t: Tenant) =>
  owner.billing.POST('/v1/admin/tenants/{id}/recover', { params: { path: { id: t.owner.tenantId } } });

beforeAll(async () => {
  bucket = testBucket();
  receiver = await startReceiver();
  p = await startIdentityPlatform({
    services: ['platform'],
    env: {
      ...bucket.env,
      ...clamdEnv(),
      ...EVENTS_TEST_ENV,
      FILES_WORKER_POLL_MS: '50',
      BILLING_TRIAL_DAYS: '14',
      BILLING_ESCALATION_INTERVAL_SEC: '3600',
    },
  });
  ownerEmail = uniqueEmail('platform-owner');
  await createPlatformOwner(p.kernel, { email: ownerEmail, password: PASSWORD });
}, 120_000);
afterAll(async () => {
  await p?.close();
  await receiver?.close();
  await bucket?.drop();
});

describe("a tenant's whole life", () => {
  it('signs up: three tenants, each on a trial; two choose a paid plan', async () => {
    const plan = await operatorPlan(p.kernel, { priceCents: 4900 });
    for (const t of [a, b, c]) {
      t.owner = await registerUser(p);
      t.token = t.owner.accessToken;
      const sub = await currentSubscriptionOf(p, t.token);
      expect(sub).toMatchObject({ status: 'trialing', tenantId: t.owner.tenantId });
      t.subscriptionId = sub.id;
    }
    for (const t of [a, b])
      ok(
        await sdk(t.token).billing.PATCH('/v1/billing/subscriptions/{id}', {
          params: { path: { id: t.subscriptionId }, header: keyed() },
          body: { planId: plan.id, version: 1 },
        }),
        200,
        'upgrade to the paid plan',
      );
  });

  it('invites members, who join', async () => {
    for (const t of [a, b, c]) t.member = await addMember(p, { accessToken: t.token });
  });

  it('installs a module and creates records', async () => {
    const owner = sdk(await platformOwner());
    ok(await owner.data.POST('/v1/modules', { body: await crmManifest() }), 201, 'crm registered');
    for (const t of [a, b, c]) {
      ok(await install(owner, 'crm', t), 201, 'installed');
      const contact = ok(
        await createRecord(t.token, 'contacts', { name: 'Ada', email: 'ada@example.com' }),
        201,
        'contact',
      );
      t.contactId = contact.id as string;
      ok(await createRecord(t.token, 'notes', { contact_id: t.contactId, body: 'met' }), 201, 'note');
    }
  });

  it('uploads files, scanned and stored; a picture gets its thumbnails', async () => {
    for (const t of [a, b, c])
      t.fileId = await upload(t, Buffer.from(`the report of ${t.owner.tenantId}`), 'documents', 'report.txt');
    const picture = await upload(a, await solidPng(64, 48), 'assets', 'picture.png');
    await eventually(
      async () => Object.keys((await fileMeta(a.token, picture)).thumbnails ?? {}),
      (presets) => presets.length === 2,
      30_000,
      'thumbnails',
    );
  });

  it('publishes on the bus to a subscribed module (one event delivered, one dead-lettered), sends a notification, keeps a wallet', async () => {
    const owner = sdk(await platformOwner());
    const slug = uniqueSlug('life');
    const topic = `platform.${slug}.events`;
    const registered = ok(
      await owner.data.POST('/v1/modules', {
        body: {
          slug,
          version: '1.0.0',
          events: { publishes: [`${slug}.thing.happened`], subscribes: [topic], endpoint: receiver.url },
        },
      }),
      201,
      'bus module',
    );
    const key = registered.credentials.key;
    [busKey, busTopic, busType] = [key, topic, `${slug}.thing.happened`];
    for (const t of [a, b, c]) {
      ok(await install(owner, slug, t), 201, 'installed');
      const bus = asModule(t.owner.tenantId);
      const sub = ok(
        await bus.events.POST('/v1/events/subscriptions', {
          body: { topic, consumerGroup: `${slug}.handler`, handlerName: 'handler' },
        }),
        201,
        'subscription',
      );
      t.subscriptionOnBus = sub.id;
      for (const fail of [false, true])
        ok(
          await bus.events.POST('/v1/events/publish', {
            body: { topic, type: `${slug}.thing.happened`, payload: { fail, tenant: t.owner.tenantId } },
          }),
          202,
          'published',
        );
      const tenantApi = sdk(t.token);
      ok(
        await tenantApi.notify.POST('/v1/notify', {
          params: { header: keyed() },
          body: {
            channel: 'email',
            recipient: { address: uniqueEmail('reader') },
            subject: 'hello',
            body: 'a notification of the tenant',
          },
        }),
        202,
        'notification',
      );
      const wallet = ok(
        await tenantApi.money.POST('/v1/wallets', {
          params: { header: keyed() },
          body: { userId: t.owner.userId, currency: 'USD' },
        }),
        201,
        'wallet',
      );
      t.walletId = wallet.id;
      ok(await credit(t, 500), 200, 'credit');
    }
    for (const t of [a, b, c]) {
      await eventually(
        async () => holdings(t.owner.tenantId),
        (h) => h.deadLetters === 1 && h.busRecords >= 2 && h.notifications === 1,
        30_000,
        'a delivered event, a dead letter and a notification',
      );
      before[t.owner.tenantId] = await holdings(t.owner.tenantId);
    }
    expect(receiver.received.length).toBeGreaterThanOrEqual(3);
  });

  it('meets every limit of its plan — 402 plan-limit-exceeded at each — and an upgrade lifts them all', async () => {
    const owner = sdk(await platformOwner());
    const extra = uniqueSlug('extra');
    ok(await owner.data.POST('/v1/modules', { body: { slug: extra, version: '1.0.0' } }), 201, 'another module');
    const attempts: Record<keyof typeof PROBLEM_RESOURCE, () => Promise<Answer>> = {
      users: () => sdk(a.token).iam.POST('/v1/users', { body: { email: uniqueEmail('one-too-many') } }),
      records: () => createRecord(a.token, 'contacts', { name: 'Grace', email: 'grace@example.com' }),
      storageBytes: () => postUpload(a, Buffer.from('one byte too many'), 'documents', 'more.txt'),
      eventsPerDay: () =>
        asModule(a.owner.tenantId).events.POST('/v1/events/publish', {
          body: { topic: busTopic, type: busType, payload: { fail: false } },
        }),
      modules: () => install(owner, extra, a),
    };
    const used: Record<string, number> = ok(await sdk(a.token).billing.GET('/v1/billing/usage'), 200, 'usage').usage;
    for (const resource of Object.keys(attempts)) expect(used[resource], resource).toBeGreaterThan(0);
    // a plan whose every limit is what the tenant holds now: the next creation of each is one too many
    const tight = await operatorPlan(p.kernel, {
      priceCents: 4900,
      limits: Object.fromEntries(Object.keys(attempts).map((r) => [r, used[r]!])),
    });
    const sub = await currentSubscriptionOf(p, a.token);
    const tenantApi = sdk(a.token);
    const changePlan = (planId: string, version: number) =>
      tenantApi.billing.PATCH('/v1/billing/subscriptions/{id}', {
        params: { path: { id: a.subscriptionId }, header: keyed() },
        body: { planId, version },
      });
    ok(await changePlan(tight.id, sub.version), 200, 'the tight plan');
    for (const [resource, attempt] of Object.entries(attempts)) {
      // the plan change decides the very next request (billing's epochs), in every process
      const problem = refused(await attempt(), 402, resource);
      expect(problem, resource).toMatchObject({
        resource: PROBLEM_RESOURCE[resource as keyof typeof PROBLEM_RESOURCE],
        limit: used[resource],
        currentUsage: used[resource],
      });
      expect(problem.type).toMatch(/\/plan-limit-exceeded$/);
    }
    // the upgrade: the pending downgrade canceled, then a dearer plan with room in every limit
    const canceled = ok(
      await tenantApi.billing.POST('/v1/billing/subscriptions/{id}/cancel-downgrade', {
        params: { path: { id: a.subscriptionId }, header: keyed() },
        body: { reason: 'room' },
      }),
      200,
      'downgrade canceled',
    );
    const roomy = await operatorPlan(p.kernel, { priceCents: 9900 });
    ok(await changePlan(roomy.id, canceled.version), 200, 'the upgrade');
    const accepted = { users: 202, records: 201, storageBytes: 201, eventsPerDay: 202, modules: 201 };
    const answers: Partial<Record<keyof typeof accepted, unknown>> = {};
    for (const [resource, attempt] of Object.entries(attempts))
      answers[resource as keyof typeof accepted] = ok(
        await attempt(),
        accepted[resource as keyof typeof accepted],
        resource,
      );
    // the other tenants never met a limit of a's plan
    for (const t of [b, c])
      ok(await createRecord(t.token, 'contacts', { name: 'Lin', email: 'lin@example.com' }), 201, 'untouched');
    // what the tenants hold now, once the new file is stored and the new event is on the bus, is what must survive
    const newFile = (answers.storageBytes as { id: string }).id;
    await eventually(
      async () => (await fileMeta(a.token, newFile)).status,
      (status) => status === 'available',
      30_000,
      'the new file available',
    );
    const hadBusRecords = before[a.owner.tenantId]!.busRecords;
    before[a.owner.tenantId] = await eventually(
      async () => holdings(a.owner.tenantId),
      (h) => h.busRecords > hadBusRecords,
      30_000,
      'the new event on the bus',
    );
    for (const t of [b, c]) before[t.owner.tenantId] = await holdings(t.owner.tenantId);
  });

  it('stops paying: past_due at the end of the trial, suspended on day 8, terminated on day 38 (402 on every request)', async () => {
    await advance(14 * DAY + HOUR);
    for (const day of [3, 3, 2]) await advance(day * DAY);
    for (const t of [a, b]) expect((await statusOf(t)).status).toBe('suspended');
    for (const day of [23, 6, 1]) await advance(day * DAY);
    for (const t of [a, b]) expect(await statusOf(t)).toEqual({ status: 'terminated', phase: 'deleting_records' });
    await relogin(a);
    const terminated = await eventually(
      () => sdk(a.token).iam.GET('/v1/users'),
      (r) => r.response.status === 402,
      10_000,
      'terminated: 402',
    );
    expect(refused(terminated, 402, 'terminated').type).toMatch(/\/subscription-terminated$/);
    // the free tenant paid nothing and owes nothing
    expect((await sdk(await relogin(c)).iam.GET('/v1/users')).response.status).toBe(200);
  });

  it('the first day after termination nothing is erased; the platform owner recovers b then', async () => {
    await advance(12 * HOUR);
    const { sessions: _s, notifications, ...kept } = await holdings(a.owner.tenantId);
    const { sessions: _b, notifications: _n, ...had } = before[a.owner.tenantId]!;
    expect(kept).toEqual(had);
    // billing's notices to the owner went through the notification service meanwhile
    expect(notifications).toBeGreaterThanOrEqual(1);
    const recovered = ok(await recover(sdk(await platformOwner()), b), 200, 'recover');
    expect(recovered).toMatchObject({ status: 'active', phase: null });
  });

  it('records phase: module rows, record streams, installations, bus subscriptions, dead letters and notifications erased; the ledger kept; the audit anonymized', async () => {
    await advance(12 * HOUR + 60_000);
    await untilPhase(a, 'deleting_files');
    const h = await holdings(a.owner.tenantId);
    expect(h).toMatchObject({
      records: 0,
      recordStreams: 0,
      installations: 0,
      busSubscriptions: 0,
      busRecords: 0,
      deadLetters: 0,
      notifications: 0,
      wallets: before[a.owner.tenantId]!.wallets,
      journal: before[a.owner.tenantId]!.journal,
    });
    // the audit log stays, its personal data anonymized: a rule for every member of the tenant
    expect(
      await count('audit.anonymizations WHERE tenant_id = $1 AND user_id = ANY($2)', [
        a.owner.tenantId,
        [a.owner.userId, a.member!.userId],
      ]),
    ).toBe(2);
  });

  it('files phase, then completed: objects, thumbnails and files erased, then members and sessions; only ledger and audit remain', async () => {
    await advance(24 * HOUR);
    await untilPhase(a, 'completed');
    // before: two files, the picture's thumbnails beside its contents
    expect(before[a.owner.tenantId]!.objects.length).toBeGreaterThanOrEqual(4);
    const h = await holdings(a.owner.tenantId);
    expect(h).toMatchObject({ files: 0, objects: [], members: 0, sessions: 0 });
    expect(h.wallets).toBe(before[a.owner.tenantId]!.wallets);
    expect(h.journal).toBe(before[a.owner.tenantId]!.journal);
    // what the event store still holds of a: the ledger's streams, billing's account and the erasure journal
    const { rows } = await p.kernel.db.query<{ kind: string }>(
      `SELECT DISTINCT split_part(stream_id, ':', 1) AS kind FROM es.streams WHERE tenant_id = $1 ORDER BY 1`,
      [a.owner.tenantId],
    );
    expect(
      rows
        .map((r) => r.kind)
        .filter((k) => !['money.wallet', 'money.reversal', 'billing.subscription', 'erasure'].includes(k)),
    ).toEqual(['identity.tenant']);
    // its ids are 404 for anyone else, the platform owner included
    const ownerToken = await platformOwner();
    const file = (token: string) => sdk(token).files.GET('/v1/files/{id}', { params: { path: { id: a.fileId } } });
    expect((await file(await relogin(c))).response.status).toBe(404);
    expect((await readRecord(c.token, a.contactId)).response.status).toBe(404);
    expect((await file(ownerToken)).response.status).toBe(404);
    // nothing of a can sign in or act for it any more: its members and sessions are gone (a former
    // member's login is 401), the module it installed answers 404 for it (the 402 of a terminated
    // tenant answered every request that still had a session, above)
    const formerOwner = await createPlatformClient({ baseUrl: p.url }).iam.POST('/v1/auth/login', {
      body: { email: a.owner.email, password: PASSWORD },
    });
    expect(formerOwner.response.status).toBe(401);
    const forA = await asModule(a.owner.tenantId).events.GET('/v1/events/subscriptions');
    expect(forA.response.status, bodyOf(forA)).toBe(404);
    const late = refused(await recover(sdk(ownerToken), a), 422, 'no recovery after completion');
    expect(late.type).toMatch(/\/invalid-transition$/);
  });

  it('the recovered tenant has everything back; the free tenant was untouched throughout', async () => {
    for (const t of [b, c]) {
      await relogin(t);
      expect(await holdings(t.owner.tenantId)).toMatchObject({
        ...before[t.owner.tenantId],
        sessions: expect.any(Number),
        notifications: expect.any(Number),
      });
      const api = sdk(t.token);
      expect((await readRecord(t.token, t.contactId)).response.status).toBe(200);
      expect((await fileMeta(t.token, t.fileId)).status).toBe('available');
      const subscription = await api.events.GET('/v1/events/subscriptions/{id}', {
        params: { path: { id: t.subscriptionOnBus } },
      });
      expect(subscription.response.status).toBe(200);
      expect(ok(await api.iam.GET('/v1/users'), 200, 'users').data.length).toBe(2);
      ok(await credit(t, 1), 200, 'credit');
    }
  });
});
