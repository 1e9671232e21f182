/**
 * The event bus's figures (issue 15): publish → handler latency at a steady rate (aim p99 < 100 ms
 * on Kafka at 1,000 events/s), batch publish throughput (aim ≥ 20,000 events/s accepted), and the
 * DLQ replay rate held at DLQ_REPLAY_RATE_LIMIT (50/s). One all-in-one platform in a child process
 * (tests/support/service-server.ts) on a fresh database; handlers are a webhook endpoint in this process.
 * --handler-ms=N: the webhook handler answers N ms after the event arrived (a module doing its own I/O; 0 by default).
 * Usage: source .test-infra/env; npx tsx bench/events-bus.ts [seconds=10] [rate=1000] [--kafka] [--dlq=200] [--single-only] [--handler-ms=0] [--cpu-prof]
 */
import { randomUUID } from 'node:crypto';
import { Agent, request } from 'node:http';
import type { Body } from '../tests/support/events';
import { moduleClient, registerModule, startReceiver, uniqueSlug } from '../tests/support/events';
import { requireEnv } from '../tests/support/env';
import { machine, report, smokeOr, startServerProcess, summarize } from './support';

const seconds = Number(process.argv[2] ?? 10);
const rate = Number(process.argv[3] ?? 1000);
const kafka = process.argv.includes('--kafka');
const dlqCount = Number(/--dlq=(\d+)/.exec(process.argv.join(' '))?.[1] ?? 200);
const handlerMs = Number(/--handler-ms=(\d+)/.exec(process.argv.join(' '))?.[1] ?? 0);
/** --single-only: the publish → handler figure alone (for profiling it) */
const singleOnly = process.argv.includes('--single-only');
/** --cpu-prof: the server process writes a CPU profile to .bench-prof/ when it stops */
const profile = process.argv.includes('--cpu-prof');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// the platform in a process of its own: the load generator and the receiver do not share its event loop
const server = await startServerProcess(
  'events',
  {
    EVENTS_RETRY_BACKOFF_MS: '30', // the DLQ phase fails events three times; the other settings are the defaults
    ...(kafka ? { KAFKA_BROKERS: requireEnv('TEST_KAFKA_BROKERS') } : {}),
  },
  profile ? ['--cpu-prof', '--cpu-prof-dir=.bench-prof'] : [],
);
const platform = { url: server.url, kernel: { db: server.database.db } };
const receiver = await startReceiver();
receiver.delayMs = handlerMs;
try {
  const tenantId = randomUUID();
  const slug = uniqueSlug('bench');
  const topic = `platform.${slug}.events`;
  const type = `${slug}.item.changed`;
  const mod = await registerModule(
    platform,
    { slug, version: '1.0.0', events: { publishes: [type], subscribes: [topic], endpoint: receiver.url } },
    [tenantId],
  );
  const client = moduleClient(platform, mod, tenantId);
  await client.call('POST', '/events/subscriptions', { topic, consumerGroup: `${slug}.bench`, handlerName: 'bench' });
  const drain = async (count: number, timeoutMs = 120_000) => {
    const until = Date.now() + timeoutMs;
    while (receiver.received.length < count && Date.now() < until) await sleep(20);
  };
  // warm-up: the topic exists, the fan-out consumes it, the first delivery went out
  await client.call('POST', '/events/publish', { topic, type, payload: { warmup: true } });
  await drain(1);
  receiver.received.length = 0;
  console.log(
    `# event bus — ${machine()}, PostgreSQL local, log ${kafka ? 'Kafka' : 'embedded PostgreSQL'}, handler answers after ${handlerMs} ms`,
  );

  // 1. publish → handler latency at a steady rate (single publishes, open loop) over at most 128
  // keep-alive connections, as a module's HTTP client keeps them: fetch opened a connection for every
  // request in flight (thousands once answers slowed), and the load generator ate the cores it measures
  const agent = new Agent({ keepAlive: true, maxSockets: 128 });
  const publishUrl = new URL(`${server.url}/v1/events/publish`);
  const publishHeaders = {
    authorization: `Bearer ${mod.key}`,
    'x-module-tenant': tenantId,
    'content-type': 'application/json',
  };
  const publishOnce = (body: unknown) =>
    new Promise<{ status: number; body: Body }>((resolve, reject) => {
      const req = request(publishUrl, { method: 'POST', agent, headers: publishHeaders }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString()) }),
        );
      });
      req.on('error', reject);
      req.end(JSON.stringify(body));
    });
  const total = Math.round(rate * seconds);
  const sentAt = new Map<string, number>();
  const answered: number[] = [];
  const started = Date.now();
  const inflight: Promise<unknown>[] = [];
  let failed = 0;
  const refusals = new Map<number, number>();
  for (let i = 0; i < total; i += 1) {
    const due = started + (i * 1000) / rate;
    if (due > Date.now()) await sleep(due - Date.now());
    const t = Date.now();
    inflight.push(
      publishOnce({ topic, type, payload: { i }, entityId: `item-${i % 64}` })
        .then((r) => {
          if (r.status !== 202) {
            failed += 1;
            refusals.set(r.status, (refusals.get(r.status) ?? 0) + 1);
          } else sentAt.set(r.body.eventId as string, t);
          answered.push(Date.now() - t);
        })
        // an open loop offers the rate whatever the server keeps up with: a refused connection is counted, not fatal
        .catch(() => {
          failed += 1;
        }),
    );
  }
  await Promise.all(inflight);
  const publishSeconds = (Date.now() - started) / 1000;
  await drain(total);
  const latencies = receiver.received
    .filter((d: Body) => sentAt.has(d.event.eventId))
    .map((d: Body) => (d.at as number) - sentAt.get(d.event.eventId)!);
  const l = summarize(latencies);
  const offered = Math.round(total / publishSeconds);
  console.log(
    `publish → handler at ${offered} events/s offered (${total} events): p50 ${l.p50} ms, p99 ${l.p99} ms, delivered ${l.n}, failed ${failed}${refusals.size ? ` (${[...refusals].map(([status, n]) => `${n}× ${status}`).join(', ')})` : ''} (aim p99 < 100 ms on Kafka at 1,000/s); the publish itself answered p50 ${summarize(answered).p50} ms, p99 ${summarize(answered).p99} ms`,
  );
  report({
    path: `bus publish → webhook handler, p99 at ${offered}/s offered (${kafka ? 'Kafka' : 'PostgreSQL log'})`,
    figure: l.p99,
    unit: 'ms',
    aim: '< 100 ms at 1,000/s, Kafka',
  });

  if (!singleOnly) {
    // 2. batch publish throughput: 500-event batches, 8 concurrent publishers, for `seconds` (smoke: 50, 2)
    receiver.received.length = 0;
    const batchSize = smokeOr(500, 50);
    const publishers = smokeOr(8, 2);
    const events = Array.from({ length: batchSize }, (_, i) => ({
      type,
      payload: { i, blob: 'x'.repeat(200) },
      entityId: `item-${i % 64}`,
    }));
    let accepted = 0;
    const bStart = performance.now();
    await Promise.all(
      Array.from({ length: publishers }, async () => {
        while (performance.now() - bStart < seconds * 1000) {
          const r = await client.call('POST', '/events/publish/batch', { topic, events });
          if (r.status === 202) accepted += batchSize;
        }
      }),
    );
    const bSeconds = (performance.now() - bStart) / 1000;
    console.log(
      `batch publish (${batchSize} events, ${publishers} publishers): ${Math.round(accepted / bSeconds)} events/s accepted over ${bSeconds.toFixed(1)} s (aim ≥ 20,000/s)`,
    );
    report({ path: 'bus batch publish, accepted', figure: accepted / bSeconds, unit: 'events/s', aim: '≥ 20,000/s' });
    const dStart = performance.now();
    await drain(accepted, 300_000);
    console.log(
      `  delivered ${receiver.received.length} of them ${((performance.now() - dStart) / 1000).toFixed(1)} s after the last was accepted`,
    );

    // 3. DLQ replay rate
    receiver.received.length = 0;
    receiver.failMarked = true;
    await client.call('POST', '/events/publish/batch', {
      topic,
      events: Array.from({ length: dlqCount }, (_, i) => ({ type, payload: { i, fail: true }, entityId: `dlq-${i}` })),
    });
    for (let pending = 0; pending < dlqCount;) {
      await sleep(200);
      const { rows } = await platform.kernel.db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM events.dlq WHERE status = 'pending'`,
      );
      pending = rows[0]!.n;
    }
    receiver.failMarked = false;
    const replay = await client.call('POST', '/events/dlq/replay-all', {});
    await drain(dlqCount);
    const times = receiver.received.map((d: Body) => d.at as number).sort((a, b) => a - b);
    const spanS = (times[times.length - 1]! - times[0]!) / 1000;
    const busiest = Math.max(...times.map((t) => times.filter((u) => u >= t && u < t + 1000).length));
    console.log(
      `DLQ replay-all of ${replay.body.replayed}: ${((times.length - 1) / spanS).toFixed(1)} events/s, busiest second ${busiest} (limit DLQ_REPLAY_RATE_LIMIT = 50/s)`,
    );
    report({
      path: 'DLQ replay-all, busiest second',
      figure: busiest,
      unit: 'events',
      aim: '≤ 50 (DLQ_REPLAY_RATE_LIMIT)',
    });
  }
} finally {
  await receiver.close();
  await server.stop();
}
process.exit(0);
