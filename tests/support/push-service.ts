import { execFileSync } from 'node:child_process';
import { createDecipheriv, createECDH, hkdfSync, randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { importJWK, jwtVerify } from 'jose';

/**
 * A local stand-in for a browser push service (RFC 8030) that does what one must: it checks the
 * VAPID authorization (RFC 8292: an ES256 JWT for the service's origin, signed by the key the
 * subscription was made with, expiring within 24 h) and decrypts the aes128gcm payload (RFC
 * 8188/8291) with the subscription's private key, as the browser would. A test reads what a
 * browser would have shown. HTTPS with a self-signed certificate made by openssl: trust `ca`.
 */
export interface PushedMessage {
  subscriptionId: string;
  /** the decrypted payload, parsed */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- checked field by field
  payload: any;
  headers: Record<string, string | string[] | undefined>;
  jwt: { aud: string; sub: string; exp: number };
}

export interface BrowserSubscription {
  id: string;
  /** PushSubscription.toJSON() */
  json: { endpoint: string; keys: { p256dh: string; auth: string } };
}

export interface PushService {
  url: string;
  /** the certificate to trust */
  ca: Buffer;
  messages: PushedMessage[];
  /** requests refused, with why */
  refusals: { status: number; why: string }[];
  /** a subscription as a browser makes one, for the application server key (VAPID public key) */
  subscribe(applicationServerKey: string): BrowserSubscription;
  /** the subscription expires: the service answers 410 Gone from now on */
  expire(id: string): void;
  close(): Promise<void>;
}

const selfSigned = (): { key: Buffer; cert: Buffer } => {
  const dir = mkdtempSync(join(tmpdir(), 'push-service-'));
  try {
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-days',
        '1',
        '-subj',
        '/CN=127.0.0.1',
        '-addext',
        'subjectAltName=IP:127.0.0.1',
        '-keyout',
        join(dir, 'key.pem'),
        '-out',
        join(dir, 'cert.pem'),
      ],
      { stdio: 'ignore' },
    );
    return { key: readFileSync(join(dir, 'key.pem')), cert: readFileSync(join(dir, 'cert.pem')) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
};

/** RFC 8291 §3.4 and RFC 8188 §2: one record, padding delimiter 0x02 then zeros */
const decrypt = (body: Buffer, uaPrivate: ReturnType<typeof createECDH>, authSecret: Buffer): Buffer => {
  const salt = body.subarray(0, 16);
  const idLength = body[20]!;
  const asPublic = body.subarray(21, 21 + idLength);
  const record = body.subarray(21 + idLength);
  const ecdhSecret = uaPrivate.computeSecret(asPublic);
  const keyInfo = Buffer.concat([Buffer.from('WebPush: info\0'), uaPrivate.getPublicKey(), asPublic]);
  const ikm = Buffer.from(hkdfSync('sha256', ecdhSecret, authSecret, keyInfo, 32));
  const cek = Buffer.from(hkdfSync('sha256', ikm, salt, Buffer.from('Content-Encoding: aes128gcm\0'), 16));
  const nonce = Buffer.from(hkdfSync('sha256', ikm, salt, Buffer.from('Content-Encoding: nonce\0'), 12));
  const decipher = createDecipheriv('aes-128-gcm', cek, nonce);
  decipher.setAuthTag(record.subarray(record.length - 16));
  const padded = Buffer.concat([decipher.update(record.subarray(0, record.length - 16)), decipher.final()]);
  const delimiter = padded.lastIndexOf(2);
  if (delimiter < 0 || padded.subarray(delimiter + 1).some((b) => b !== 0)) throw new Error('bad padding');
  return padded.subarray(0, delimiter);
};

const publicJwk = (uncompressed: Buffer) => ({
  kty: 'EC',
  crv: 'P-256',
  x: uncompressed.subarray(1, 33).toString('base64url'),
  y: uncompressed.subarray(33, 65).toString('base64url'),
});

export const startPushService = async (): Promise<PushService> => {
  const { key, cert } = selfSigned();
  const subscriptions = new Map<
    string,
    { ua: ReturnType<typeof createECDH>; auth: Buffer; serverKey: string; gone: boolean }
  >();
  const messages: PushedMessage[] = [];
  const refusals: { status: number; why: string }[] = [];
  let origin = '';

  const handle = async (
    path: string,
    headers: Record<string, string | string[] | undefined>,
    body: Buffer,
  ): Promise<[number, string]> => {
    const id = /^\/push\/([\w-]+)$/.exec(path)?.[1];
    const sub = id ? subscriptions.get(id) : undefined;
    if (!id || !sub) return [404, 'unknown subscription'];
    if (sub.gone) return [410, 'subscription expired'];
    const auth = /^vapid t=([^,\s]+),\s*k=([A-Za-z0-9_-]+)$/.exec(String(headers.authorization ?? ''));
    if (!auth) return [401, 'no VAPID authorization'];
    if (auth[2] !== sub.serverKey) return [403, 'not the application server key the subscription was made with'];
    let jwt: PushedMessage['jwt'];
    try {
      const verified = await jwtVerify(
        auth[1]!,
        await importJWK(publicJwk(Buffer.from(auth[2], 'base64url')), 'ES256'),
        { algorithms: ['ES256'], audience: origin },
      );
      jwt = verified.payload as PushedMessage['jwt'];
    } catch (error) {
      return [403, `VAPID JWT refused: ${(error as Error).message}`];
    }
    if (jwt.exp > Date.now() / 1000 + 24 * 3600) return [403, 'VAPID JWT expires more than 24 h ahead'];
    if (!/^(mailto:|https:)/.test(String(jwt.sub))) return [403, 'VAPID subject is not mailto: or https:'];
    if (headers['content-encoding'] !== 'aes128gcm') return [415, 'not aes128gcm'];
    if (headers.ttl === undefined) return [400, 'no TTL'];
    let payload: unknown;
    try {
      payload = JSON.parse(decrypt(body, sub.ua, sub.auth).toString('utf8'));
    } catch (error) {
      return [400, `cannot decrypt: ${(error as Error).message}`];
    }
    messages.push({ subscriptionId: id, payload, headers, jwt });
    return [201, ''];
  };

  const server: Server = createServer({ key, cert }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void handle(req.url ?? '/', req.headers, Buffer.concat(chunks)).then(([status, why]) => {
        if (status >= 300) refusals.push({ status, why });
        res.writeHead(status).end(why);
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  origin = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    url: origin,
    ca: cert,
    messages,
    refusals,
    subscribe(applicationServerKey) {
      const ua = createECDH('prime256v1');
      ua.generateKeys();
      const auth = randomBytes(16);
      const id = randomUUID();
      subscriptions.set(id, { ua, auth, serverKey: applicationServerKey, gone: false });
      return {
        id,
        json: {
          endpoint: `${origin}/push/${id}`,
          keys: { p256dh: ua.getPublicKey().toString('base64url'), auth: auth.toString('base64url') },
        },
      };
    },
    expire(id) {
      const sub = subscriptions.get(id);
      if (sub) sub.gone = true;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
};
