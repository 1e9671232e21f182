// Deep checks for the test engines started by scripts/test-infra.sh: one real request each.
// Usage: node scripts/infra/probe.mjs <kafka|s3|clamd|chdb>…   (exit 0 = all passed)
// Prints one line per service on success; on failure the reason goes to stderr.
import net from 'node:net';

const HOST = '127.0.0.1';
const env = (name, fallback) => process.env[name] ?? fallback;

// The EICAR anti-virus test string, kept as hex so this file is not itself "infected".
const EICAR = Buffer.from(
  '58354f2150254041505b345c505a58353428505e2937434329377d2445494341522d5354414e444152442d414e544956495255532d544553542d46494c452124482b482a',
  'hex',
);

async function kafka() {
  const { Kafka, logLevel } = await import('kafkajs');
  const brokers = [`${HOST}:${env('INFRA_KAFKA_PORT', '59092')}`];
  const admin = new Kafka({
    clientId: 'test-infra-probe',
    brokers,
    logLevel: logLevel.NOTHING,
    connectionTimeout: 3000,
    requestTimeout: 5000,
    retry: { retries: 0 },
  }).admin();
  await admin.connect();
  try {
    const cluster = await admin.describeCluster();
    const topics = await admin.listTopics();
    if (cluster.brokers.length < 1) throw new Error('metadata lists no broker');
    return `metadata ok (cluster ${cluster.clusterId}, ${cluster.brokers.length} broker, ${topics.length} topics)`;
  } finally {
    await admin.disconnect();
  }
}

async function s3() {
  const {
    S3Client,
    CreateBucketCommand,
    ListBucketsCommand,
    PutObjectCommand,
    GetObjectCommand,
    DeleteObjectCommand,
    DeleteBucketCommand,
  } = await import('@aws-sdk/client-s3');
  const endpoint = `http://${HOST}:${env('INFRA_S3_PORT', '59000')}`;
  const client = (secretAccessKey) =>
    new S3Client({
      endpoint,
      region: 'us-east-1',
      forcePathStyle: true,
      maxAttempts: 1,
      credentials: { accessKeyId: env('INFRA_S3_ACCESS_KEY', 'platform-test'), secretAccessKey },
    });
  const good = client(env('INFRA_S3_SECRET_KEY', 'platform-test-secret'));
  const bad = client('not-the-secret');
  const Bucket = `infra-probe-${process.pid}-${Date.now()}`;
  const Key = 'probe.txt';
  let presigned = 'presigned URLs not checked (@aws-sdk/s3-request-presigner not installed)';
  await good.send(new CreateBucketCommand({ Bucket }));
  try {
    const { Buckets = [] } = await good.send(new ListBucketsCommand({}));
    if (!Buckets.some((b) => b.Name === Bucket)) throw new Error('created bucket is not listed');
    await good.send(new PutObjectCommand({ Bucket, Key, Body: 'hello' }));
    const got = await good.send(new GetObjectCommand({ Bucket, Key }));
    if ((await got.Body.transformToString()) !== 'hello') throw new Error('object read back differs');

    let refused = false;
    try {
      await bad.send(new ListBucketsCommand({}));
    } catch (err) {
      refused = err?.$metadata?.httpStatusCode === 403;
      if (!refused)
        throw new Error(`a wrong secret failed, but not with 403: ${err?.name} ${err?.message}`, { cause: err });
    }
    if (!refused) throw new Error('a request signed with a wrong secret was accepted: SigV4 is not checked');

    const presigner = await import('@aws-sdk/s3-request-presigner').catch(() => null);
    if (presigner) {
      const url = await presigner.getSignedUrl(good, new GetObjectCommand({ Bucket, Key }), { expiresIn: 60 });
      const ok = await fetch(url);
      if (ok.status !== 200 || (await ok.text()) !== 'hello') throw new Error(`presigned GET answered ${ok.status}`);
      const tampered = await fetch(
        url.replace(/X-Amz-Signature=[0-9a-f]/, (m) => m.slice(0, -1) + (m.endsWith('0') ? '1' : '0')),
      );
      await tampered.arrayBuffer();
      if (tampered.status !== 403) throw new Error(`a tampered presigned URL answered ${tampered.status}, not 403`);
      presigned = 'presigned URLs checked';
    }
  } finally {
    await good.send(new DeleteObjectCommand({ Bucket, Key })).catch(() => {});
    await good.send(new DeleteBucketCommand({ Bucket })).catch(() => {});
  }
  return `SigV4 ok (bucket create/list/put/get; wrong secret → 403; ${presigned})`;
}

// One clamd command over TCP with the null-terminated ("z") protocol; resolves the reply.
function clamdCommand(command, payload) {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: HOST, port: Number(env('INFRA_CLAMD_PORT', '53310')) });
    const chunks = [];
    socket.setTimeout(10_000, () => socket.destroy(new Error(`clamd ${command}: timed out`)));
    socket.on('data', (c) => chunks.push(c));
    socket.on('error', reject);
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('utf8').replace(/\0$/, '').trim()));
    socket.on('connect', () => {
      socket.write(`z${command}\0`);
      if (payload) {
        const size = Buffer.alloc(4);
        size.writeUInt32BE(payload.length);
        socket.write(size);
        socket.write(payload);
        socket.write(Buffer.alloc(4)); // zero-length chunk ends the stream
      }
    });
  });
}

async function clamd() {
  const pong = await clamdCommand('PING');
  if (pong !== 'PONG') throw new Error(`PING answered ${JSON.stringify(pong)}`);
  const exact = await clamdCommand('INSTREAM', EICAR);
  if (!/FOUND$/.test(exact)) throw new Error(`EICAR scan answered ${JSON.stringify(exact)}, expected FOUND`);
  const embedded = await clamdCommand(
    'INSTREAM',
    Buffer.concat([Buffer.from('header\n'), EICAR, Buffer.from('\ntrailer\n')]),
  );
  if (!/FOUND$/.test(embedded))
    throw new Error(`embedded EICAR scan answered ${JSON.stringify(embedded)}, expected FOUND`);
  const clean = await clamdCommand('INSTREAM', Buffer.from('just a harmless text file\n'));
  if (!/OK$/.test(clean)) throw new Error(`clean scan answered ${JSON.stringify(clean)}, expected OK`);
  return `PONG; EICAR → ${exact.replace(/^stream: /, '')}; clean → OK`;
}

async function chdb() {
  const mod = await import('chdb');
  const out = mod.query('SELECT 1 AS one, version() AS v', 'JSONEachRow');
  const row = JSON.parse(out.trim());
  if (row.one !== 1) throw new Error(`SELECT 1 returned ${out}`);
  return `libchdb loaded (ClickHouse ${row.v})`;
}

const probes = { kafka, s3, clamd, chdb };
const names = process.argv.slice(2);
if (names.length === 0 || names.some((n) => !probes[n])) {
  console.error(`usage: probe.mjs <${Object.keys(probes).join('|')}>…`);
  process.exit(2);
}
let failed = false;
await Promise.all(
  names.map(async (name) => {
    try {
      console.log(`${name}: ${await probes[name]()}`);
    } catch (err) {
      failed = true;
      console.error(`${name}: check failed: ${err?.stack ?? err}`);
    }
  }),
);
process.exit(failed ? 1 : 0);
