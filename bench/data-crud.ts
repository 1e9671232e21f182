/**
 * The data layer's figures (issue 16): generated-CRUD creates per second through HTTP (aim ≥ 2,000/s)
 * — POST /v1/data/crm/contacts of the sample module, closed loop, each a record event applied to the
 * module's table in its transaction — and the p99 of a list page over a table of `rows` records of
 * one tenant with an index (aim < 20 ms at 1,000,000 rows): GET /v1/data/crm/contacts sorted by name
 * from a filter value, 20 per page (the index contacts_by_tenant_name serves it).
 * Usage: source .test-infra/env; npx tsx bench/data-crud.ts [seconds=10] [rows=1000000] [connections=32]
 */
import autocannon from 'autocannon';
import { PLATFORM_TENANT_ID } from '../domain/identity/constants';
import { testToken } from '../tests/support/auth';
import { crmManifest } from '../tests/support/data';
import { machine, report, startServerProcess } from './support';

const seconds = Number(process.argv[2] ?? 10);
const rows = Number(process.argv[3] ?? 1_000_000);
const connections = Number(process.argv[4] ?? 32);
const TENANT = 'bench-crm';

// the server in a process of its own: autocannon does not share its event loop
const p = await startServerProcess('data');
const db = p.database.db;
try {
  const owner = `Bearer ${testToken(PLATFORM_TENANT_ID, 'bench-owner', ['platform.*'])}`;
  const user = `Bearer ${testToken(TENANT, 'bench-user', ['crm.*'])}`;
  const call = async (method: string, path: string, body: unknown) => {
    const res = await fetch(`${p.url}/v1${path}`, {
      method,
      headers: { authorization: owner, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
  };
  await call('POST', '/modules', await crmManifest());
  await call('POST', '/modules/crm/installations', { tenantId: TENANT });

  let n = 0;
  const creates = (duration: number) =>
    autocannon({
      url: `${p.url}/v1/data/crm/contacts`,
      connections,
      duration,
      requests: [
        {
          method: 'POST',
          setupRequest: (req) => ({
            ...req,
            headers: { authorization: user, 'content-type': 'application/json' },
            body: JSON.stringify({ name: `contact ${(n += 1)}`, email: `c${n}@example.test` }),
          }),
        },
      ],
    });
  await creates(1);
  const c = await creates(seconds);
  console.log(`# data layer — ${machine()}, PostgreSQL local`);
  console.log(
    `generated creates: ${Math.round(c['2xx'] / seconds)}/s over ${seconds} s, ${connections} connections (aim ≥ 2,000/s); p50 ${c.latency.p50} ms, p99 ${c.latency.p99} ms; non-2xx ${c.non2xx}`,
  );
  report({ path: 'generated-CRUD creates', figure: c['2xx'] / seconds, unit: '/s', aim: '≥ 2,000/s' });
  report({ path: 'generated-CRUD creates, p99', figure: c.latency.p99, unit: 'ms', aim: '' });

  // the list figure needs many rows, not many events: they are inserted directly (the table is what a list reads)
  const have = (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM module_crm.contacts')).rows[0]!.n;
  for (let done = have; done < rows; done += 100_000) {
    await db.query(
      `INSERT INTO module_crm.contacts (tenant_id, id, name, email)
      SELECT $1, gen_random_uuid(), 'name ' || lpad(g::text, 8, '0'), 'x' || g || '@example.test' FROM generate_series($2::int, $3::int) g`,
      [TENANT, done, Math.min(rows, done + 100_000) - 1],
    );
  }
  await db.query('ANALYZE module_crm.contacts');
  const list = await autocannon({
    url: `${p.url}/v1/data/crm/contacts?sort=name&page_size=20&name[gte]=name%200050`,
    connections: 8,
    duration: seconds,
    requests: [{ method: 'GET', headers: { authorization: user } }],
  });
  console.log(
    `list page of 20 over ${rows} rows (index on tenant_id, name, id): p50 ${list.latency.p50} ms, p99 ${list.latency.p99} ms (aim p99 < 20 ms); ${Math.round(list['2xx'] / seconds)}/s; non-2xx ${list.non2xx}`,
  );
  report({
    path: `list page of 20 over ${rows.toLocaleString('en')} rows, p99`,
    figure: list.latency.p99,
    unit: 'ms',
    aim: '< 20 ms',
  });
} finally {
  await p.stop();
}
