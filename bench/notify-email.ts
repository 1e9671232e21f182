/**
 * Email throughput to an SMTP server: N notifications queued at once (batches of 500 over 10
 * tenants, rate limits raised), then the time until the SMTP sink has received every one. The
 * sink counts by X-Notification-Id and reports duplicates. `pool` adds ?pool=true to SMTP_URL
 * (nodemailer keeps connections open; without it every mail opens a connection).
 * Usage: source .test-infra/env; npx tsx bench/notify-email.ts [count=5000] [pool]
 */
import { machine } from './support';
import { post, startNotifyServer, startSmtpSink } from './notify-support';

const count = Number(process.argv[2] ?? 5000);
const pool = process.argv.includes('pool');
const sink = await startSmtpSink();
const server = await startNotifyServer({
  SMTP_URL: pool ? `${sink.url}?pool=true&maxConnections=10` : sink.url,
  NOTIFY_RATE_LIMIT_PER_TENANT: '10000000',
  NOTIFY_QUEUE_MAX_PER_TENANT: '10000000',
});
try {
  const started = performance.now();
  const ids: string[] = [];
  for (let sent = 0; sent < count; sent += 500) {
    const n = Math.min(500, count - sent);
    const res = await post(server.url, `bench-${(sent / 500) % 10}`, '/notify/batch', {
      channel: 'email',
      subject: 'Weekly digest',
      body: 'Three things happened this week.',
      recipients: Array.from({ length: n }, (_, i) => ({ address: `user${sent + i}@example.test` })),
    });
    if (res.status !== 202) throw new Error(`batch: ${res.status} ${JSON.stringify(res.body)}`);
    ids.push(...res.body.ids!);
  }
  const queuedMs = performance.now() - started;
  const deadline = Date.now() + 600_000;
  while ([...sink.received.keys()].filter((k) => k !== 'unknown').length < count && Date.now() < deadline)
    await new Promise((r) => setTimeout(r, 50));
  const totalMs = (sink.arrivals.at(-1) ?? performance.now()) - started;
  const duplicates = [...sink.received.values()].filter((v) => v > 1).length;
  console.log(
    `# email throughput to an SMTP server — ${machine()}, PostgreSQL local, SMTP sink in the bench process, ${pool ? 'pooled connections' : 'a connection per mail'}`,
  );
  console.log(
    `${sink.received.size} of ${count} mails received in ${(totalMs / 1000).toFixed(1)} s: ${Math.round(sink.received.size / (totalMs / 1000))} mails/s (queued in ${(queuedMs / 1000).toFixed(1)} s); duplicates ${duplicates}`,
  );
} finally {
  await server.stop();
  await sink.close();
}
