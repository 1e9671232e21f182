/**
 * One ClickHouse for the role processes of a split test run: the chdb engine served over
 * ClickHouse's HTTP interface (infra/clickhouse/server.ts, the server the cluster primary of
 * `platform start` serves its HTTP workers with), so gateway, write-api, read-api and workers share
 * it through CLICKHOUSE_URL like a ClickHouse server. libchdb binds its data folder to one process,
 * which is why the roles cannot each open it themselves.
 *
 *   npx tsx tests/support/clickhouse-server.ts <data folder>   → prints `READY http://127.0.0.1:<port>`
 */
import { startClickHouseServer } from '../../infra/clickhouse/server';

const folder = process.argv[2];
if (!folder) {
  console.error('usage: clickhouse-server.ts <data folder>');
  process.exit(2);
}
const server = await startClickHouseServer({ folder });
process.stdout.write(`READY ${server.url}\n`);
// the IPC channel closes when the test process dies, however it dies: stop with it
process.on('disconnect', () => process.exit(0));
process.on('SIGTERM', () => void server.close().then(() => process.exit(0)));
