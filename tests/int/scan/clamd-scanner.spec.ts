import { createServer, type Server, type Socket } from 'node:net';
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClamdScanner } from '../../../infra/scan/clamd';
import { ScanError } from '../../../infra/scan/port';
import { requireEnv } from '../../support/env';

// The EICAR anti-virus test file, kept as hex so this file is not itself "infected".
const EICAR = Buffer.from(
  '58354f2150254041505b345c505a58353428505e2937434329377d2445494341522d5354414e444152442d414e544956495255532d544553542d46494c452124482b482a',
  'hex',
);

const host = requireEnv('TEST_CLAMD_HOST');
const port = Number(requireEnv('TEST_CLAMD_PORT'));

describe('a clamd that knows the EICAR signature', () => {
  const scanner = createClamdScanner({ host, port, timeoutMs: 10_000, chunkSize: 16 });

  it('answers a ping', async () => {
    await expect(scanner.ping()).resolves.toBeUndefined();
  });

  it('finds EICAR in a buffer, sent over many small chunks', async () => {
    const verdict = await scanner.scan(EICAR);
    expect(verdict.clean).toBe(false);
    expect(verdict).toMatchObject({ signature: expect.stringMatching(/eicar/i) });
  });

  it('finds EICAR in a stream', async () => {
    const verdict = await scanner.scan(Readable.from([EICAR.subarray(0, 10), EICAR.subarray(10)]));
    expect(verdict).toMatchObject({ clean: false });
  });

  it('finds EICAR inside a larger file, across chunk boundaries', async () => {
    const file = Buffer.concat([randomBytes(100_003), EICAR, randomBytes(50_000)]);
    expect(await createClamdScanner({ host, port, chunkSize: 4096 }).scan(file)).toMatchObject({ clean: false });
  });

  it('calls other bytes clean', async () => {
    expect(await scanner.scan(Buffer.from('quarterly report, nothing to see'))).toEqual({ clean: true });
  });

  it('calls a few megabytes of other bytes, streamed, clean', async () => {
    const big = randomBytes(3 * 1024 * 1024);
    const pieces = Array.from({ length: Math.ceil(big.length / 100_000) }, (_, i) =>
      big.subarray(i * 100_000, (i + 1) * 100_000),
    );
    expect(await createClamdScanner({ host, port }).scan(Readable.from(pieces))).toEqual({ clean: true });
  });

  it('calls an empty body clean', async () => {
    expect(await scanner.scan(Buffer.alloc(0))).toEqual({ clean: true });
  });

  it('keeps giving verdicts to concurrent scans', async () => {
    const verdicts = await Promise.all([EICAR, Buffer.from('a'), EICAR, Buffer.from('b')].map((b) => scanner.scan(b)));
    expect(verdicts.map((v) => v.clean)).toEqual([false, true, false, true]);
  });
});

describe('a scanner whose clamd accepts connections but never answers', () => {
  let silent: Server;
  const sockets: Socket[] = [];
  let silentPort = 0;

  beforeAll(async () => {
    silent = createServer((socket) => {
      sockets.push(socket);
      socket.resume(); // swallow everything, say nothing
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    silentPort = (silent.address() as { port: number }).port;
  });
  afterAll(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => silent.close(resolve));
  });

  it('gives up on a scan at its deadline', async () => {
    const scanner = createClamdScanner({ host: '127.0.0.1', port: silentPort, timeoutMs: 300 });
    const started = Date.now();
    await expect(scanner.scan(Buffer.from('anything'))).rejects.toBeInstanceOf(ScanError);
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('gives up on a ping at its deadline', async () => {
    await expect(
      createClamdScanner({ host: '127.0.0.1', port: silentPort, timeoutMs: 300 }).ping(),
    ).rejects.toBeInstanceOf(ScanError);
  });
});

describe('a scanner whose clamd refuses a stream over its StreamMaxLength', () => {
  let refusing: Server;
  let refusingPort = 0;
  beforeAll(async () => {
    // what clamd says when a stream passes StreamMaxLength, before it closes the connection
    refusing = createServer((socket) => {
      socket.once('data', () => socket.end('INSTREAM size limit exceeded. ERROR\0'));
      socket.on('error', () => undefined);
    });
    await new Promise<void>((resolve) => refusing.listen(0, '127.0.0.1', resolve));
    refusingPort = (refusing.address() as { port: number }).port;
  });
  afterAll(async () => {
    await new Promise((resolve) => refusing.close(resolve));
  });

  it('answers "unscannable", neither clean nor a failure of the scanner', async () => {
    const verdict = await createClamdScanner({ host: '127.0.0.1', port: refusingPort }).scan(randomBytes(200_000));
    expect(verdict).toEqual({ clean: false, unscannable: 'INSTREAM size limit exceeded. ERROR' });
  });
});

describe('a scanner whose clamd is not running', () => {
  it('fails at once with a scan error', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const closedPort = (closed.address() as { port: number }).port;
    await new Promise((resolve) => closed.close(resolve));

    await expect(
      createClamdScanner({ host: '127.0.0.1', port: closedPort }).scan(Buffer.from('x')),
    ).rejects.toBeInstanceOf(ScanError);
  });
});
