/**
 * The data layer's figures (issue 16): generated-CRUD creates per second through HTTP (aim ≥ 2,000/s)
 * — POST /v1/data/crm/contacts of the sample module, closed loop, each a record event applied to the
 * module's table in its transaction — and the p99 of a list page over a table of `rows` records of
 * one tenant with an index (aim < 20 ms at 1,000,000 rows): GET /v1/data/crm/contacts sorted by name
 * from a filter value, 20 per page (the index contacts_by_tenant_name serves it).
 * Peer in the same run: PocketBase (bench/peers/pocketbase.ts — built once from the Go module proxy
 * into .cache/, a collection with the same fields and an index on name) takes the same creates
 * and, once its table holds as many rows, the same list page, with the same connections. Skipped
 * in a smoke run unless BENCH_PEERS=1 (its first build takes minutes); where it cannot be built or
 * run, the script says why and prints PocketBase's published reference.
 * Usage: source .test-infra/env; npx tsx bench/data-crud.ts [seconds=10] [rows=1000000] [connections=32]
 */
import autocannon from 'autocannon';
import { PLATFORM_TENANT_ID } from '../domain/identity/constants';
import { testToken } from '../tests/support/auth';
import { crmManifest } from '../tests/support/data';
import type { PocketBasePeer } from './peers/pocketbase';
import { POCKETBASE_REFERENCE, POCKETBASE_VERSION, pocketbaseBinary, startPocketBase } from './peers/pocketbase';
import { machine, progress, report, smoke, startServerProcess } from './support';

const seconds = Number(process.argv[2] ?? 10);
const rows = Number(process.argv[3] ?? 1_000_000);
const connections = Number(process.argv[4] ?? 32);
const TENANT = 'bench-crm';

// the server in a process of its own: autocannon does not share its event loop
const p = await startServerProcess('data');
const db = p.database.db;
let pb: PocketBasePeer | null = null;
/** the table's peer column when PocketBase did not run: why, and its published reference */
let noPeer: string | null = null;
try {
  if (smoke && process.env.BENCH_PEERS !== '1') {
    noPeer = 'PocketBase: skipped in a smoke run';
    console.log('peer: PocketBase skipped in a smoke run (BENCH_PEERS=1 runs it)');
  } else {
    progress('data-crud', `peer: PocketBase ${POCKETBASE_VERSION} (built into .cache/ once)`);
    const binary = pocketbaseBinary();
    if ('path' in binary)
      pb = await startPocketBase(binary.path).catch((e: unknown) => {
        noPeer = `PocketBase: could not be run here — ${POCKETBASE_REFERENCE}`;
        console.log(
          `peer: PocketBase ${POCKETBASE_VERSION} could not be run here (${String(e)}); ${POCKETBASE_REFERENCE}`,
        );
        return null;
      });
    else {
      noPeer = `PocketBase: could not be built here — ${POCKETBASE_REFERENCE}`;
      console.log(
        `peer: PocketBase ${POCKETBASE_VERSION} could not be built here (${binary.reason}); ${POCKETBASE_REFERENCE}`,
      );
    }
  }
  const peerName = `PocketBase ${POCKETBASE_VERSION}, same fields and connections`;
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
  const creates = (url: string, authorization: string, duration: number) =>
    autocannon({
      url,
      connections,
      duration,
      requests: [
        {
          method: 'POST',
          setupRequest: (req) => ({
            ...req,
            headers: { authorization, 'content-type': 'application/json' },
            body: JSON.stringify({ name: `contact ${(n += 1)}`, email: `c${n}@example.test` }),
          }),
        },
      ],
    });
  const ours = `${p.url}/v1/data/crm/contacts`;
  await creates(ours, user, 1);
  const c = await creates(ours, user, seconds);
  let peerCreates: { perSecond: number; p99: number } | null = null;
  if (pb) {
    const pbUrl = `${pb.url}/api/collections/contacts/records`;
    await creates(pbUrl, pb.token, 1);
    const r = await creates(pbUrl, pb.token, seconds);
    peerCreates = { perSecond: r['2xx'] / seconds, p99: r.latency.p99 };
    console.log(
      `  peer, PocketBase ${POCKETBASE_VERSION}: ${Math.round(peerCreates.perSecond)} creates/s, ${connections} connections; p50 ${r.latency.p50} ms, p99 ${r.latency.p99} ms; non-2xx ${r.non2xx}`,
    );
  }
  console.log(`# data layer — ${machine()}, PostgreSQL local`);
  console.log(
    `generated creates: ${Math.round(c['2xx'] / seconds)}/s over ${seconds} s, ${connections} connections (aim ≥ 2,000/s); p50 ${c.latency.p50} ms, p99 ${c.latency.p99} ms; non-2xx ${c.non2xx}`,
  );
  report({
    path: 'generated-CRUD creates',
    figure: c['2xx'] / seconds,
    unit: '/s',
    aim: '≥ 2,000/s and ≥ the peer',
    ...(peerCreates ? { peer: peerName, peerFigure: peerCreates.perSecond } : noPeer ? { peer: noPeer } : {}),
  });
  report({
    path: 'generated-CRUD creates, p99',
    figure: c.latency.p99,
    unit: 'ms',
    aim: '',
    ...(peerCreates ? { peer: peerName, peerFigure: peerCreates.p99 } : {}),
  });

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
  let peerList: { p99: number; perSecond: number } | null = null;
  let had = 0;
  if (pb) {
    // as many rows in its table, the same page: sorted by name from the same value, 20, no total count (ours has none)
    try {
      had = pb.seed(Math.max(rows, 1));
    } catch (error) {
      console.log(`  peer, PocketBase: its table could not be filled here (${String(error)}); no list figure`);
    }
  }
  if (pb && had) {
    const filter = encodeURIComponent("(name>='name 0050')");
    const r = await autocannon({
      url: `${pb.url}/api/collections/contacts/records?sort=name&perPage=20&skipTotal=1&filter=${filter}`,
      connections: 8,
      duration: seconds,
      requests: [{ method: 'GET', headers: { authorization: pb.token } }],
    });
    peerList = { p99: r.latency.p99, perSecond: r['2xx'] / seconds };
    console.log(
      `  peer, PocketBase ${POCKETBASE_VERSION}, list page of 20 over ${had} rows (index on name): p50 ${r.latency.p50} ms, p99 ${r.latency.p99} ms; ${Math.round(peerList.perSecond)}/s; non-2xx ${r.non2xx}`,
    );
  }
  report({
    path: `list page of 20 over ${rows.toLocaleString('en')} rows, p99`,
    figure: list.latency.p99,
    unit: 'ms',
    aim: '< 20 ms',
    ...(peerList ? { peer: peerName, peerFigure: peerList.p99 } : {}),
  });
  report({
    path: `list pages of 20 over ${rows.toLocaleString('en')} rows, 8 connections`,
    figure: list['2xx'] / seconds,
    unit: '/s',
    aim: '',
    ...(peerList ? { peer: peerName, peerFigure: peerList.perSecond } : {}),
  });
} finally {
  await pb?.stop();
  await p.stop();
}
