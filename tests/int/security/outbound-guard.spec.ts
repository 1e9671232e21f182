import http from 'node:http';
import type { AddressInfo, Server, Socket } from 'node:net';
import { createServer } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createHttpPost } from '../../../infra/http/post-client';
import { createSmtpMailer } from '../../../infra/mail/smtp';
import type { OutboundRefused } from '../../../infra/security/outbound';
import { DESTINATION_REFUSED, OutboundGuard, outboundFailureText } from '../../../infra/security/outbound';
import { testResolver } from '../../support/resolver';

/**
 * The outbound guard on real sockets, on loopback only: a listener on 127.0.0.1 counts the
 * connections that reach it, a stub resolver maps names to loopback, private and metadata
 * addresses. Where the guard refuses, the listener must see nothing; where it must let through
 * (enforcement off, as in development and test), the listener sees the connection. Names that map
 * beyond loopback are only ever looked up, never connected to.
 */
const PUBLIC = '93.184.215.14';
let listener: Server;
let port = 0;
let seen = 0;
const open = new Set<Socket>();
const dns = testResolver();
const enforcing = new OutboundGuard({ allowPrivate: false, resolver: dns.resolver, registrationLookupMs: 500 });
const permissive = new OutboundGuard({ allowPrivate: true, resolver: dns.resolver });

const refusalOf = (error: unknown) => error as OutboundRefused;
const lookupAll = (guard: OutboundGuard, name: string) =>
  new Promise<unknown>((resolve, reject) =>
    guard.lookup(name, { all: true }, (error, addresses) => (error ? reject(error) : resolve(addresses))),
  );
const get = (url: string, agent: http.Agent) =>
  new Promise<number>((resolve, reject) => {
    const req = http.get(url, { agent }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
  });

beforeAll(async () => {
  listener = createServer((socket) => {
    seen += 1;
    open.add(socket);
    socket.on('close', () => open.delete(socket));
    socket.on('error', () => undefined);
    // a line an HTTP client reads as an answer, an SMTP client as a greeting it cannot use
    socket.end('HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n');
  });
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  port = (listener.address() as AddressInfo).port;
  dns.set('loop.test', ['127.0.0.1']);
  dns.set('mapped.test', ['::ffff:127.0.0.1']);
  dns.set('inside.test', ['10.0.0.1']);
  dns.set('metadata.test', ['169.254.169.254']);
  dns.set('metadata6.test', ['fd00:ec2::254']);
  dns.set('mixed.test', [PUBLIC, '10.0.0.7']);
  dns.set('public.test', [PUBLIC]);
});
beforeEach(() => {
  seen = 0;
});
afterAll(async () => {
  enforcing.close();
  permissive.close();
  for (const s of open) s.destroy();
  await new Promise((resolve) => listener.close(resolve));
});

describe('the guard with enforcement on (staging, production)', () => {
  it.each([
    ['inside.test', '10.0.0.1', 'private'],
    ['metadata.test', '169.254.169.254', 'metadata'],
    ['metadata6.test', 'fd00:ec2::254', 'metadata'],
    ['mixed.test', '10.0.0.7', 'private'],
    ['loop.test', '127.0.0.1', 'loopback'],
    ['mapped.test', '::ffff:127.0.0.1', 'loopback'],
  ])('refuses %s (%s) in the lookup a socket would use', async (name, address, cls) => {
    const error = refusalOf(await lookupAll(enforcing, name).catch((e: unknown) => e));
    expect(error).toMatchObject({ code: 'EOUTBOUND_REFUSED', address, addressClass: cls });
    expect(outboundFailureText(error)).toBe(DESTINATION_REFUSED);
  });

  it('answers a public name, in the form net.connect asks for', async () => {
    expect(await lookupAll(enforcing, 'public.test')).toEqual([{ address: PUBLIC, family: 4 }]);
    const one = await new Promise((resolve) =>
      enforcing.lookup('public.test', {}, (error, address, family) => resolve({ error, address, family })),
    );
    expect(one).toEqual({ error: null, address: PUBLIC, family: 4 });
  });

  it('refuses a TCP connection to a name that resolves to loopback before any packet: the listener sees nothing', async () => {
    await expect(enforcing.connect('loop.test', port, 2_000)).rejects.toMatchObject({ code: 'EOUTBOUND_REFUSED' });
    await expect(enforcing.connect('127.0.0.1', port, 2_000)).rejects.toMatchObject({ code: 'EOUTBOUND_REFUSED' });
    await expect(enforcing.connect('[::ffff:127.0.0.1]', port, 2_000)).rejects.toMatchObject({
      code: 'EOUTBOUND_REFUSED',
    });
    expect(seen).toBe(0);
  });

  it('refuses HTTP through its agents, for names and literals alike: the listener sees nothing', async () => {
    const agent = enforcing.httpAgent();
    for (const url of [`http://loop.test:${port}/`, `http://127.0.0.1:${port}/`, `http://[::ffff:7f00:1]:${port}/`])
      await expect(get(url, agent), url).rejects.toMatchObject({ code: 'EOUTBOUND_REFUSED' });
    const post = createHttpPost(enforcing);
    await expect(post(`http://loop.test:${port}/hook`, '{}', {}, 2_000)).rejects.toMatchObject({
      code: 'EOUTBOUND_REFUSED',
    });
    expect(seen).toBe(0);
  });

  it('refuses the SMTP connection of a tenant server, whatever the URL says', async () => {
    for (const url of [
      `smtp://loop.test:${port}`,
      `smtp://127.0.0.1:${port}`,
      `smtps://u:p@[::ffff:127.0.0.1]:${port}`,
    ]) {
      const mailer = createSmtpMailer({ url, from: 'a@b.example', timeoutMs: 2_000, guard: enforcing });
      const error = await mailer.send({ to: 'x@y.example', subject: 's', text: 't' }).catch((e: unknown) => e);
      expect(outboundFailureText(error), url).toBe(DESTINATION_REFUSED);
      await mailer.close();
    }
    expect(seen).toBe(0);
  });

  it('checks at connect time: a name public at registration and loopback at delivery (DNS rebinding) is refused', async () => {
    dns.set('rebind.test', [PUBLIC]);
    expect(await enforcing.urlProblem('endpoint', `http://rebind.test:${port}/`)).toBeNull();
    dns.set('rebind.test', ['127.0.0.1']);
    await expect(get(`http://rebind.test:${port}/`, enforcing.httpAgent())).rejects.toMatchObject({
      code: 'EOUTBOUND_REFUSED',
    });
    expect(seen).toBe(0);
  });

  it('refuses at registration a literal or a name inside, and lets a name that does not resolve pass to the connect-time check', async () => {
    for (const url of [
      'smtp://10.0.0.1:25',
      'smtps://[fd00:ec2::254]:465',
      'https://169.254.169.254/latest/meta-data',
      'https://[::ffff:a9fe:a9fe]/',
      'http://0x7f.1/', // the URL parser reads it as 127.0.0.1
      'https://inside.test/push',
      'https://mixed.test/push',
      'smtp://localhost.test:25',
    ]) {
      if (url.includes('localhost.test')) dns.set('localhost.test', ['127.0.0.1']);
      expect(await enforcing.urlProblem('config.smtpUrl', url), url).toMatchObject({
        field: 'config.smtpUrl',
        code: 'DESTINATION_NOT_ALLOWED',
      });
    }
    expect(await enforcing.urlProblem('endpoint', 'https://public.test/push')).toBeNull();
    expect(await enforcing.urlProblem('endpoint', 'https://unknown.test/push')).toBeNull();
  });
});

describe('the guard with enforcement off (development, test)', () => {
  it('reaches a loopback listener by name and by literal, as before', async () => {
    const socket = await permissive.connect('loop.test', port, 2_000);
    socket.destroy();
    expect(await get(`http://loop.test:${port}/`, permissive.httpAgent())).toBe(200);
    expect(await get(`http://127.0.0.1:${port}/`, permissive.httpAgent())).toBe(200);
    expect(seen).toBe(3);
    expect(await permissive.urlProblem('endpoint', 'https://10.0.0.1/')).toBeNull();
  });
});

describe('what a tenant reads of a failed connection', () => {
  it('is a category: no address, port or remote text', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const closedPort = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const refused = await permissive.connect('127.0.0.1', closedPort, 2_000).catch((e: unknown) => e);
    expect((refused as Error).message).toContain(String(closedPort));
    expect(outboundFailureText(refused)).toBe('connection failed');
    const unknown = await permissive.connect('unknown.test', port, 2_000).catch((e: unknown) => e);
    expect(outboundFailureText(unknown)).toBe('host name not found');
    const wrapped = Object.assign(new Error('smtp failed or is unreachable.'), { status: 502, cause: refused });
    expect(outboundFailureText(wrapped)).toBe('connection failed');
    expect(outboundFailureText(Object.assign(new Error('no answer'), { name: 'TimeoutError' }))).toBe('timeout');
  });
});
