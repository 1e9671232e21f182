import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { v7 as uuidv7 } from 'uuid';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testToken } from '../../support/auth';
import { testTool } from '../../support/env';
import type { TestPlatform } from '../../support/platform';
import { startTestPlatform } from '../../support/platform';
import { pollUntil } from '../../support/poll';

/**
 * GET /metrics on every role, scraped as Prometheus scrapes it and checked with Prometheus's own
 * libraries: tools/go/promscrape (promlint — what `promtool check metrics` runs — and expfmt's
 * parser), built by scripts/test-infra.sh into $TEST_TOOLS_BIN. Runs all-in-one and split (the
 * figures of the work come from the role that runs it: appends from write-api, the relay,
 * projections and queues from workers).
 */
interface Sample {
  labels: Record<string, string>;
  value?: number;
  count?: number;
  sum?: number;
  buckets?: { le: number; count: number }[];
}
interface Scrape {
  status: number;
  contentType: string;
  body?: string;
  problems: { metric: string; text: string }[];
  families: Record<string, { type: string; help: string; samples: Sample[] }>;
}

const TOKEN = randomBytes(24).toString('hex');
const run = promisify(execFile);

/** one scrape by promscrape, with the token or without */
const scrape = async (url: string, token: string | null = TOKEN): Promise<Scrape> => {
  const bin = testTool('promscrape');
  const args = token === null ? [`${url}/metrics`] : ['-token-env', 'SCRAPE_TOKEN', `${url}/metrics`];
  const { stdout } = await run(bin, args, { env: { ...process.env, SCRAPE_TOKEN: token ?? '' } });
  return JSON.parse(stdout) as Scrape;
};

const samples = (s: Scrape, name: string): Sample[] => s.families[name]?.samples ?? [];
const matching = (s: Scrape, name: string, labels: Record<string, string>): Sample[] =>
  samples(s, name).filter((x) => Object.entries(labels).every(([k, v]) => x.labels[k] === v));
const valueOf = (s: Scrape, name: string, labels: Record<string, string> = {}): number | undefined =>
  matching(s, name, labels)[0]?.value;
const total = (s: Scrape, name: string, labels: Record<string, string> = {}): number =>
  matching(s, name, labels).reduce((sum, x) => sum + (x.value ?? x.count ?? 0), 0);

/**
 * prom-client's default metrics promlint finds fault with (gauges named *_total, by prom-client's
 * choice, kept as they are: dashboards know them by these names); none of ours may have a problem
 */
const KNOWN_DEFAULT_PROBLEMS = new Set([
  'nodejs_active_handles_total',
  'nodejs_active_requests_total',
  'nodejs_active_resources_total',
]);

let p: TestPlatform;
const headers = {
  authorization: `Bearer ${testToken('tenant-m', 'u1', ['tally.*'])}`,
  'content-type': 'application/json',
};
/** the role that serves clients, the one that appends, the one that runs the relay and projectors */
const front = () => p.url;
const writer = () => p.roleUrls['write-api'] ?? p.url;
const worker = () => p.roleUrls.workers ?? p.url;

beforeAll(async () => {
  p = await startTestPlatform({ env: { METRICS_TOKEN: TOKEN } });
});
afterAll(async () => {
  await p?.close();
});

describe('GET /metrics without the metrics token', () => {
  it('is refused with a 401 problem on every role', async () => {
    for (const url of Object.values(p.roleUrls)) {
      const res = await fetch(`${url}/metrics`);
      expect(res.status, url).toBe(401);
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/);
      const problem = (await res.json()) as { type: string; status: number };
      expect(problem.type).toMatch(/\/unauthorized$/);
      expect(problem.status).toBe(401);
    }
  });

  it('is refused with another token, as Prometheus would send it', async () => {
    const refused = await scrape(front(), randomBytes(24).toString('hex'));
    expect(refused.status).toBe(401);
    expect(refused.families).toEqual({});
  });
});

describe('a platform that served requests, appended, relayed and projected', () => {
  let before: Scrape;
  const counter = `metrics-${randomBytes(4).toString('hex')}`;

  beforeAll(async () => {
    // given: what the front role had counted before
    before = await scrape(front());
    // when: a create and three increments
    const created = await p.http('/v1/tally/counters', {
      method: 'POST',
      headers,
      body: JSON.stringify({ id: counter, name: counter }),
    });
    expect(created.status).toBe(201);
    for (let i = 0; i < 3; i++) {
      const res = await p.http(`/v1/tally/counters/${counter}/increment`, {
        method: 'POST',
        headers: { ...headers, 'idempotency-key': uuidv7() },
        body: JSON.stringify({ by: 1 }),
      });
      expect(res.status).toBe(200);
    }
    // and: the relay published them and the projection applied them. A scrape reads its counters
    // before its gauges' queries answer, so a relay that publishes meanwhile can show a backlog of 0
    // beside a count that does not have the batch yet: caught up is both.
    await pollUntil(
      () => scrape(worker()),
      (x) =>
        valueOf(x, 'platform_projection_lag_events', { projection: 'tally.totals' }) === 0 &&
        valueOf(x, 'platform_relay_backlog_records', { source: 'outbox-relay' }) === 0 &&
        total(x, 'platform_relay_published_records_total', { source: 'outbox-relay' }) >= 4,
      { timeoutMs: 30_000, everyMs: 250, what: 'the relay and the projection caught up' },
    );
  });

  it('passes promlint, parses, and says it is Prometheus text format, on every role', async () => {
    const names = new Set<string>();
    for (const [role, url] of Object.entries(p.roleUrls)) {
      const s = await scrape(url);
      expect(s.status, role).toBe(200);
      expect(s.contentType).toMatch(/^text\/plain; version=0\.0\.4/);
      expect(
        s.problems.filter((x) => !KNOWN_DEFAULT_PROBLEMS.has(x.metric)),
        role,
      ).toEqual([]);
      // prom-client's process metrics beside ours
      expect(Object.keys(s.families), role).toEqual(
        expect.arrayContaining([
          'process_cpu_user_seconds_total',
          'nodejs_eventloop_lag_seconds',
          'platform_db_pool_connections',
        ]),
      );
      for (const name of Object.keys(s.families)) names.add(name);
    }
    expect([...names]).toEqual(
      expect.arrayContaining([
        'platform_http_request_duration_seconds',
        'platform_eventstore_appended_events_total',
        'platform_relay_published_records_total',
        'platform_projection_lag_events',
        'platform_queue_depth',
        'platform_bus_dead_letters',
        'platform_db_pool_acquire_duration_seconds',
      ]),
    );
  });

  it('counts the requests in the HTTP histogram by method, route template and status class', async () => {
    const after = await scrape(front());
    const increments = { method: 'POST', route: '/v1/tally/counters/:id/increment', status_class: '2xx' };
    expect(after.families.platform_http_request_duration_seconds?.type).toBe('HISTOGRAM');
    expect(total(after, 'platform_http_request_duration_seconds', increments)).toBe(
      total(before, 'platform_http_request_duration_seconds', increments) + 3,
    );
    const [series] = matching(after, 'platform_http_request_duration_seconds', increments);
    expect(series!.sum).toBeGreaterThan(0);
    expect(series!.buckets!.at(-1)!.count).toBe(series!.count);
    // route templates, never the raw path
    const routes = samples(after, 'platform_http_request_duration_seconds').map((x) => x.labels.route);
    expect(routes.some((r) => r!.includes(counter))).toBe(false);
  });

  it('counts the appends and their latency where the commands run', async () => {
    const s = await scrape(writer());
    const appended = total(s, 'platform_eventstore_appended_events_total');
    expect(appended).toBeGreaterThanOrEqual(4);
    const latency = samples(s, 'platform_eventstore_append_duration_seconds');
    expect(latency.reduce((n, x) => n + (x.count ?? 0), 0)).toBeGreaterThan(0);
    expect(valueOf(s, 'platform_db_pool_max_connections')).toBeGreaterThan(0);
  });

  it('reports the relay and the projection caught up: lag 0 once the events are published and applied', async () => {
    const s = await scrape(worker());
    expect(valueOf(s, 'platform_projection_lag_events', { projection: 'tally.totals' })).toBe(0);
    expect(valueOf(s, 'platform_relay_backlog_records', { source: 'outbox-relay' })).toBe(0);
    expect(valueOf(s, 'platform_projection_lag_seconds', { projection: 'tally.totals' })).toBe(0);
    expect(valueOf(s, 'platform_relay_oldest_unpublished_age_seconds', { source: 'outbox-relay' })).toBe(0);
    expect(total(s, 'platform_relay_published_records_total', { source: 'outbox-relay' })).toBeGreaterThanOrEqual(4);
    expect(samples(s, 'platform_bus_consumer_lag_seconds')[0]?.value).toBeGreaterThanOrEqual(0);
    expect(valueOf(s, 'platform_bus_dead_letters', { status: 'pending' })).toBe(0);
  });
});

describe('a durable queue holding a job', () => {
  it('reports its depth and the age of its oldest item', async () => {
    // given: a task due tomorrow, enqueued a minute ago (no worker runs its type)
    await p.kernel.db.query(
      `INSERT INTO events.tasks (id, tenant_id, type, payload, status, attempts, max_attempts, run_at, created_at, updated_at)
       VALUES ($1, 'tenant-m', 'metrics.test.never', '{}', 'queued', 0, 3, now() + interval '1 day', now() - interval '1 minute', now())`,
      [uuidv7()],
    );
    // when: Prometheus scrapes the role that runs the queues
    const s = await scrape(worker());
    // then
    expect(valueOf(s, 'platform_queue_depth', { queue: 'events.tasks' })).toBeGreaterThanOrEqual(1);
    expect(valueOf(s, 'platform_queue_oldest_age_seconds', { queue: 'events.tasks' })).toBeGreaterThanOrEqual(60);
    expect(valueOf(s, 'platform_queue_depth', { queue: 'notify.deliveries' })).toBe(0);
  });
});
