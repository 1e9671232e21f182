import { promises as dnsPromises } from 'node:dns';
import type { LookupAddress, LookupOptions } from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import type { Duplex } from 'node:stream';
import type { FieldError } from '../../domain/shared/errors';
import type { AddressClass } from './addresses';
import { classifyAddress } from './addresses';

/**
 * The one guard of every outbound connection to a destination a tenant (or a module) gave: a
 * tenant's SMTP server, a browser's push service, a module's webhook endpoint, and any later port
 * (DESIGN.md mechanism 11). Outside development and test only public addresses are reachable:
 * loopback, private, CGNAT, link-local, metadata, multicast, broadcast, unspecified and reserved
 * addresses are refused (infra/security/addresses.ts), in every IPv6 form that carries one.
 *
 * The check runs on the address the connection is about to use, at connect time: names resolve
 * through this guard's resolver inside the socket's `lookup`, and a name that answered a public
 * address when it was registered and a private one now (DNS rebinding) is refused before any packet
 * is sent. Registration checks the same way once more, so a literal or a name that resolves inside
 * is refused with a validation error at once. The platform's own configured destinations
 * (SMTP_URL, S3, Kafka, clamd, OIDC issuers) do not pass through it.
 */

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** a host name to its addresses: the system's resolver (getaddrinfo) in production, a stub in tests */
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

export const systemResolver: Resolver = async (hostname) =>
  (await dnsPromises.lookup(hostname, { all: true, verbatim: true })).map((a) => ({
    address: a.address,
    family: a.family === 6 ? 6 : 4,
  }));

export const OUTBOUND_REFUSED = 'EOUTBOUND_REFUSED';

/** a connection the policy refused; its message (host, address) is for the logs, never for the tenant */
export class OutboundRefused extends Error {
  readonly code = OUTBOUND_REFUSED;
  constructor(
    readonly host: string,
    readonly address: string,
    readonly addressClass: AddressClass,
  ) {
    super(`outbound connection to ${host} refused: ${address} is a ${addressClass} address`);
    this.name = 'OutboundRefused';
  }
}

export interface OutboundOptions {
  /** true: every address is reachable (development and test by default; OUTBOUND_ALLOW_PRIVATE) */
  allowPrivate: boolean;
  resolver?: Resolver;
  /** how long a registration waits for a name to resolve (default 5 s); a name that does not resolve then is accepted */
  registrationLookupMs?: number;
}

/** OUTBOUND_ALLOW_PRIVATE when set, else true in development and test only */
export const allowsPrivate = (config: { PLATFORM_ENV: string; OUTBOUND_ALLOW_PRIVATE?: 'true' | 'false' }): boolean =>
  config.OUTBOUND_ALLOW_PRIVATE
    ? config.OUTBOUND_ALLOW_PRIVATE === 'true'
    : config.PLATFORM_ENV === 'development' || config.PLATFORM_ENV === 'test';

const bare = (host: string): string => host.replace(/^\[|\]$/g, '');

const notFound = (hostname: string) =>
  Object.assign(new Error(`${hostname} did not resolve to an address`), { code: 'ENOTFOUND', hostname });

const familyOf = (family: LookupOptions['family']): 4 | 6 | null =>
  family === 4 || family === 'IPv4' ? 4 : family === 6 || family === 'IPv6' ? 6 : null;

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

export class OutboundGuard {
  readonly allowPrivate: boolean;
  private readonly resolver: Resolver;
  private readonly registrationLookupMs: number;
  private readonly agents: http.Agent[] = [];

  constructor(options: OutboundOptions) {
    this.allowPrivate = options.allowPrivate;
    this.resolver = options.resolver ?? systemResolver;
    this.registrationLookupMs = options.registrationLookupMs ?? 5_000;
  }

  private refusalOf(host: string, address: string): OutboundRefused | null {
    if (this.allowPrivate) return null;
    const cls = classifyAddress(address) ?? 'reserved';
    return cls === 'public' ? null : new OutboundRefused(host, address, cls);
  }

  /**
   * The addresses a connection to `host` may use: the literal itself, or every address the
   * resolver answers, each one allowed — one forbidden answer refuses the name (a host with an
   * inside address among its records is not a public destination). Throws OutboundRefused.
   */
  async resolve(host: string): Promise<ResolvedAddress[]> {
    const name = bare(host);
    const literal = net.isIP(name);
    const addresses: ResolvedAddress[] = literal
      ? [{ address: name, family: literal === 6 ? 6 : 4 }]
      : await this.resolver(name);
    if (addresses.length === 0) throw notFound(name);
    for (const a of addresses) {
      const refusal = this.refusalOf(name, a.address);
      if (refusal) throw refusal;
    }
    return addresses;
  }

  /** net.connect's `lookup` (also http.Agent's, tls.connect's): resolves through the guard, refusing at connect time */
  readonly lookup = (hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    this.resolve(hostname).then(
      (all) => {
        const family = familyOf(options.family);
        const wanted = family ? all.filter((a) => a.family === family) : all;
        if (wanted.length === 0) callback(notFound(hostname), '');
        else if (options.all) callback(null, wanted);
        else callback(null, wanted[0]!.address, wanted[0]!.family);
      },
      (error: NodeJS.ErrnoException) => callback(error, ''),
    );
  };

  /** a literal address refused before net.connect (which does not call `lookup` for one) */
  private literalRefusal(host: string): OutboundRefused | null {
    const name = bare(host);
    return net.isIP(name) ? this.refusalOf(name, name) : null;
  }

  /** a TCP connection to host:port through the guard (SMTP); rejects with OutboundRefused before any packet */
  connect(host: string, port: number, timeoutMs: number): Promise<net.Socket> {
    const refusal = this.literalRefusal(host);
    if (refusal) return Promise.reject(refusal);
    return new Promise((resolve, reject) => {
      const socket = net.connect({ host: bare(host), port, lookup: this.lookup });
      const fail = (error: Error) => {
        clearTimeout(timer);
        socket.destroy();
        reject(error);
      };
      const timer = setTimeout(
        () => fail(Object.assign(new Error(`no connection within ${timeoutMs} ms`), { code: 'ETIMEDOUT' })),
        timeoutMs,
      );
      socket.once('error', fail);
      socket.once('connect', () => {
        clearTimeout(timer);
        socket.removeListener('error', fail);
        // the caller attaches its own handlers; an error in between must not end the process
        socket.on('error', () => undefined);
        resolve(socket);
      });
    });
  }

  private guarded<A extends http.Agent>(agent: A): A {
    const create = agent.createConnection.bind(agent);
    agent.createConnection = (options, callback) => {
      const refusal = this.literalRefusal(String(options.host ?? options.hostname ?? 'localhost'));
      if (refusal) {
        // the agent hands the error to the request ('error'), as for a socket that failed to connect
        process.nextTick(() => callback?.(refusal, undefined as unknown as Duplex));
        return undefined;
      }
      return create({ ...options, lookup: this.lookup }, callback);
    };
    this.agents.push(agent);
    return agent;
  }

  /** an HTTP agent whose connections go through the guard */
  httpAgent(options: http.AgentOptions = {}): http.Agent {
    return this.guarded(new http.Agent({ ...options, lookup: this.lookup }));
  }

  /** an HTTPS agent whose connections go through the guard (web-push takes one; tests add their CA) */
  httpsAgent(options: https.AgentOptions = {}): https.Agent {
    return this.guarded(new https.Agent({ ...options, lookup: this.lookup }));
  }

  /**
   * The registration-time check of a destination URL's host: a validation problem on `field` when
   * the host is, or resolves to, an address the policy refuses. A name that does not resolve within
   * the deadline passes: the connect-time check is the one that holds.
   */
  async urlProblem(field: string, url: string): Promise<(FieldError & { code: string }) | null> {
    if (this.allowPrivate || !URL.canParse(url)) return null;
    const host = bare(new URL(url).hostname);
    if (!host) return null;
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<null>((resolve) => {
      timer = setTimeout(() => resolve(null), this.registrationLookupMs);
    });
    try {
      await Promise.race([this.resolve(host), deadline]);
      return null;
    } catch (error) {
      return error instanceof OutboundRefused
        ? {
            field,
            message:
              'the destination must be a public address: this host is, or resolves to, a loopback, private, link-local, multicast, metadata or reserved address',
            code: 'DESTINATION_NOT_ALLOWED',
          }
        : null;
    } finally {
      clearTimeout(timer);
    }
  }

  close(): void {
    for (const agent of this.agents.splice(0)) agent.destroy();
  }
}

const TIMEOUT_CODES = new Set([
  'ETIMEDOUT',
  'ESOCKETTIMEDOUT',
  'ETIMEOUT',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
]);
const DNS_CODES = new Set(['ENOTFOUND', 'EAI_AGAIN', 'EAI_FAIL', 'EAI_NONAME', 'ENODATA', 'ESERVFAIL', 'EDNS']);
const TLS_CODE = /^(ERR_TLS|ERR_SSL|ERR_OSSL|ETLS$|CERT_|DEPTH_ZERO|SELF_SIGNED|UNABLE_TO_|HOSTNAME_MISMATCH)/;

/** an error and the causes under it (a guard's or a library's wrapping) */
export const errorChain = (error: unknown): Record<string, unknown>[] => {
  const chain: Record<string, unknown>[] = [];
  let e: unknown = error;
  while (e && typeof e === 'object' && chain.length < 5) {
    chain.push(e as Record<string, unknown>);
    e = (e as { cause?: unknown }).cause;
  }
  return chain;
};

export const DESTINATION_REFUSED = 'destination refused by policy (not a public address)';

/**
 * What a tenant may read of a failed outbound connection: a category, never the socket's or the
 * remote's own words (they name inside addresses and ports, or carry an inside service's banner).
 * The whole error belongs in the platform's log.
 */
export const outboundFailureText = (error: unknown): string => {
  const chain = errorChain(error);
  const codes = chain.map((e) => (typeof e.code === 'string' ? e.code : ''));
  if (codes.includes(OUTBOUND_REFUSED) || chain.some((e) => e instanceof OutboundRefused)) return DESTINATION_REFUSED;
  if (chain[0]?.status === 503) return 'service unavailable';
  if (
    codes.some((c) => TIMEOUT_CODES.has(c)) ||
    chain.some((e) => e.name === 'TimeoutError' || e.status === 504 || /timed? ?out/i.test(String(e.message)))
  )
    return 'timeout';
  if (codes.some((c) => DNS_CODES.has(c))) return 'host name not found';
  if (codes.some((c) => TLS_CODE.test(c))) return 'TLS handshake failed';
  return 'connection failed';
};
