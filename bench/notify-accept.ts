/**
 * Notifications accepted per second (aim ≥ 2,000/s): POST /v1/notify through the HTTP edge, closed
 * loop, spread over 100 tenants (each below the 10,000 queue cap), no Idempotency-Key (the group
 * commit of accepts). By default the delivery workers are off, so the figure is what acceptance
 * takes; --deliver runs them too (to the .eml folder of DATA_DIR) and prints the figure under that load.
 * Usage: source .test-infra/env; npx tsx bench/notify-accept.ts [seconds=10] [connections=32] [--deliver]
 */
import autocannon from 'autocannon';
import { machine } from './support';
import { authorization, startNotifyServer } from './notify-support';

const seconds = Number(process.argv[2] ?? 10);
const connections = Number(process.argv[3] ?? 32);
const deliver = process.argv.includes('--deliver');
const TENANTS = 100;

const server = await startNotifyServer({
  NOTIFY_SERVER_DELIVERY: deliver ? 'on' : 'off',
  NOTIFY_RATE_LIMIT_PER_TENANT: '1000000',
});
try {
  const auth = Array.from({ length: TENANTS }, (_, i) => authorization(`bench-${i}`));
  let n = 0;
  const run = (duration: number) =>
    autocannon({
      url: `${server.url}/v1/notify`,
      connections,
      duration,
      requests: [
        {
          method: 'POST',
          setupRequest: (req) => {
            n += 1;
            return {
              ...req,
              headers: { authorization: auth[n % TENANTS]!, 'content-type': 'application/json' },
              body: JSON.stringify({
                channel: 'email',
                recipient: { address: `user${n % 1000}@example.test` },
                subject: 'Your receipt',
                body: `Order ${n} is confirmed.`,
                meta: { order: n },
              }),
            };
          },
        },
      ],
    });
  await run(1);
  const r = await run(seconds);
  const statuses: Record<string, number> = {};
  for (const [code, v] of Object.entries(r.statusCodeStats ?? {})) statuses[code] = v.count;
  const { rows } = await server.database.db.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM rm.notify_notifications',
  );
  console.log(`# notifications accepted — ${machine()}, PostgreSQL local, delivery ${deliver ? 'on' : 'off'}`);
  console.log(
    `accepted ${Math.round(r['2xx'] / seconds)}/s over ${seconds} s, ${connections} connections (aim ≥ 2,000/s); p50 ${r.latency.p50} ms, p99 ${r.latency.p99} ms, max ${r.latency.max} ms; statuses ${JSON.stringify(statuses)}; history rows ${rows[0]!.n}`,
  );
} finally {
  await server.stop();
}
