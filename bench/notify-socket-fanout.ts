/**
 * Socket fan-out (aim: 1,000 connected clients, p99 delivery < 200 ms): 1,000 users each hold a
 * socket on GET /v1/notify/ws; each round queues one websocket notification per user (two batches
 * of 500) and measures, per message, from its acceptance (createdAt) to its arrival at the client
 * — through the queue, a worker's claim, the replay buffer and the fan-out bus (Redis with
 * REDIS_URL, PostgreSQL LISTEN/NOTIFY otherwise; pass `redis` to use the test Redis).
 * Usage: source .test-infra/env; npx tsx bench/notify-socket-fanout.ts [clients=1000] [rounds=5] [redis] [--cpu-prof]
 */
import { seedMember } from '../tests/support/money';
import { testToken } from '../tests/support/auth';
import { requireEnv } from '../tests/support/env';
import type { SocketClient } from '../tests/support/socket-client';
import { openSession } from '../tests/support/socket-client';
import { machine, report } from './support';
import { latencySummary, post, startNotifyServer } from './notify-support';

const clients = Number(process.argv[2] ?? 1000);
const rounds = Number(process.argv[3] ?? 5);
const redis = process.argv.includes('redis');
/** --cpu-prof: the server process writes a CPU profile to .bench-prof/ when it stops */
const profile = process.argv.includes('--cpu-prof');
const server = await startNotifyServer(
  {
    NOTIFY_RATE_LIMIT_PER_TENANT: '10000000',
    NOTIFY_POLL_INTERVAL_MS: '50',
    // a thousand sockets open from one address: the edge's per-address limit of anonymous requests would refuse them
    RATE_LIMIT_ANONYMOUS_PER_MIN: '10000000',
    ...(redis ? { REDIS_URL: requireEnv('TEST_REDIS_URL') } : {}),
  },
  profile ? ['--cpu-prof', '--cpu-prof-dir=.bench-prof'] : [],
);
const sockets: SocketClient[] = [];
try {
  const users = Array.from({ length: clients }, (_, i) => `fan-${i}`);
  for (const u of users) await seedMember(server.database.db, 'fanout', u);
  for (let i = 0; i < users.length; i += 50)
    sockets.push(
      ...(await Promise.all(users.slice(i, i + 50).map((u) => openSession(server.url, testToken('fanout', u, []))))),
    );
  const latencies: number[] = [];
  for (let round = 0; round < rounds; round += 1) {
    const before = sockets.map((s) => s.notifications().length);
    const arrivals = sockets.map(
      (s, i) =>
        new Promise<void>((resolve) => {
          void s
            .waitFor(
              (m) => m.filter((x) => x.type === 'notification').length > before[i]!,
              "the round's message",
              60_000,
            )
            .then(() => {
              const message = s.notifications().at(-1);
              latencies.push(Date.now() - Date.parse(message.created_at));
              resolve();
            });
        }),
    );
    for (let i = 0; i < users.length; i += 500) {
      const res = await post(server.url, 'fanout', '/notify/batch', {
        channel: 'websocket',
        subject: `round ${round}`,
        body: 'x',
        recipients: users.slice(i, i + 500).map((userId) => ({ userId })),
      });
      if (res.status !== 202) throw new Error(`batch: ${res.status} ${JSON.stringify(res.body)}`);
    }
    await Promise.all(arrivals);
  }
  console.log(
    `# socket fan-out — ${machine()}, PostgreSQL local, bus ${redis ? 'Redis' : 'PostgreSQL LISTEN/NOTIFY'}, ${clients} clients in the bench process`,
  );
  console.log(
    `accept → client, ${rounds} rounds of one message per client: ${JSON.stringify(latencySummary(latencies))} ms (aim p99 < 200 ms)`,
  );
  report({
    path: `notify socket fan-out, ${clients.toLocaleString('en')} clients (${redis ? 'Redis' : 'PostgreSQL'} bus), accept → client p99`,
    figure: latencySummary(latencies).p99,
    unit: 'ms',
    aim: '< 100 ms',
  });
} finally {
  await Promise.all(sockets.map((s) => s.close()));
  await server.stop();
}
