/**
 * Transfers per second through the HTTP API with Idempotency-Keys: random pairs among many wallets,
 * and into and out of one hot wallet. The server runs as a child process on the test PostgreSQL.
 * The random pairs' peer in the same run: pgledger (its SQL functions, bench/peers/pgledger/) in a
 * scratch database on the same PostgreSQL, pgbench calling its transfer function between random
 * accounts, as many accounts and connections as ours (bench/peers/pgledger.ts).
 * Usage: source .test-infra/env; npx tsx bench/money-transfers.ts [seconds=10] [concurrency=32] [--prof]
 */
import { moneyHttp, REFERENCES, runTransfers, startBenchServer } from './money-support';
import { pgbenchVersion } from './peers/pgbench';
import { PGLEDGER_COMMIT, pgledgerTransfers } from './peers/pgledger';
import { progress, report, smokeOr } from './support';

const seconds = Number(process.argv[2] ?? 10);
const concurrency = Number(process.argv[3] ?? 32);
const profile = process.argv.includes('--prof');

const server = await startBenchServer(profile ? ['--cpu-prof', '--cpu-prof-dir=.bench-prof'] : []);
try {
  const api = moneyHttp(server);
  // 1,000 funded wallets (smoke: 20), opened 20 at a time
  const wallets: string[] = [];
  for (let i = 0; i < smokeOr(1000, 20); i += 20)
    wallets.push(
      ...(await Promise.all(Array.from({ length: 20 }, (_, k) => api.openFunded(`user-${i + k}`, 1_000_000)))),
    );
  const pick = () => wallets[Math.floor(Math.random() * wallets.length)]!;

  const random = await runTransfers(server.url, seconds, concurrency, () => {
    const from = pick();
    let to = pick();
    while (to === from) to = pick();
    return [from, to];
  });
  console.log(`random pairs among ${wallets.length} wallets, ${concurrency} concurrent:`, random);
  progress('bench', `peer: pgledger, pgbench transfers among ${wallets.length} accounts, ${concurrency} clients`);
  const peer = (await pgbenchVersion())
    ? await pgledgerTransfers({
        serverUrl: process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL ?? '',
        accounts: wallets.length,
        clients: concurrency,
        seconds,
      })
    : null;
  if (!peer) console.log(`  peer: pgbench is not on this machine, pgledger not run; published: ${REFERENCES[0]}`);
  else
    console.log(
      `  peer, pgledger ${PGLEDGER_COMMIT.slice(0, 7)} (SQL functions) under pgbench, ${wallets.length} accounts, ${concurrency} clients: ${Math.round(peer.perSecond)} transfers/s; latency average ${peer.latencyMs.toFixed(2)} ms; ${peer.transfers} transfers, entries and balances checked`,
    );
  report({
    path: `random transfers among ${wallets.length.toLocaleString('en')} wallets, ${concurrency} connections`,
    figure: random.perSecond,
    unit: '/s',
    aim: '≥ 2,500/s',
    ...(peer
      ? {
          peer: `pgledger ${PGLEDGER_COMMIT.slice(0, 7)} under pgbench, same accounts and clients`,
          peerFigure: peer.perSecond,
        }
      : { peer: `pgledger: not run here (no pgbench) — published: ${REFERENCES[0]}` }),
  });
  report({ path: 'random transfers, p99', figure: random.p99, unit: 'ms', aim: '< 50 ms' });

  const hot = wallets[0]!;
  const hotResult = await runTransfers(server.url, seconds, concurrency, () => {
    const other = wallets[1 + Math.floor(Math.random() * (wallets.length - 1))]!;
    return Math.random() < 0.5 ? [hot, other] : [other, hot];
  });
  console.log(`one hot wallet (every transfer into or out of it), ${concurrency} concurrent:`, hotResult);
  report({
    path: `hot-wallet transfers, ${concurrency} connections`,
    figure: hotResult.perSecond,
    unit: '/s',
    aim: '',
  });
  report({ path: 'hot-wallet transfers, p99', figure: hotResult.p99, unit: 'ms', aim: '' });
  console.log('references:', REFERENCES.join(' | '));
} finally {
  await server.stop();
}
