import { isIPv4, isIPv6 } from 'node:net';

/**
 * What an IP address is, for the outbound guard (infra/security/outbound.ts): only `public`
 * addresses may receive a connection a tenant asked for outside development. Everything not
 * globally reachable is named: loopback, RFC 1918 and unique-local (private), CGNAT (shared),
 * link-local, the clouds' metadata services, multicast, broadcast, unspecified (0.0.0.0 and ::
 * reach the host itself on Linux), and the rest of the IANA special-purpose ranges (reserved).
 * IPv6 forms that carry an IPv4 address (mapped, compatible, SIIT, NAT64, 6to4) are the class
 * of that address; Teredo and local-use NAT64 can reach any IPv4 address and are reserved.
 */
export type AddressClass =
  | 'public'
  | 'unspecified'
  | 'loopback'
  | 'private'
  | 'shared'
  | 'link-local'
  | 'metadata'
  | 'multicast'
  | 'broadcast'
  | 'reserved';

/** cloud instance metadata services (AWS, GCP and Azure, ECS, EKS pod identity, Alibaba, Oracle) */
const METADATA_V4 = new Set(['169.254.169.254', '169.254.170.2', '169.254.170.23', '100.100.100.200', '192.0.0.192']);
/** AWS's IPv6 metadata service and EKS pod identity, as 8 groups */
const METADATA_V6 = [
  [0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x0254],
  [0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x0023],
];

const v4 = (text: string): number => text.split('.').reduce((n, octet) => n * 256 + Number(octet), 0);

/** [first address, prefix length, class], most specific first */
const V4_RANGES: readonly [number, number, AddressClass][] = (
  [
    ['255.255.255.255', 32, 'broadcast'],
    ['0.0.0.0', 8, 'unspecified'],
    ['10.0.0.0', 8, 'private'],
    ['100.64.0.0', 10, 'shared'],
    ['127.0.0.0', 8, 'loopback'],
    ['169.254.0.0', 16, 'link-local'],
    ['172.16.0.0', 12, 'private'],
    ['192.0.0.0', 24, 'reserved'], // IETF protocol assignments
    ['192.0.2.0', 24, 'reserved'], // documentation
    ['192.88.99.0', 24, 'reserved'], // 6to4 relay anycast (deprecated)
    ['192.168.0.0', 16, 'private'],
    ['198.18.0.0', 15, 'reserved'], // benchmarking
    ['198.51.100.0', 24, 'reserved'], // documentation
    ['203.0.113.0', 24, 'reserved'], // documentation
    ['224.0.0.0', 4, 'multicast'],
    ['240.0.0.0', 4, 'reserved'], // future use
  ] as const
).map(([first, bits, cls]) => [v4(first), bits, cls]);

const inRange = (address: number, first: number, bits: number): boolean =>
  bits === 0 || Math.floor(address / 2 ** (32 - bits)) === Math.floor(first / 2 ** (32 - bits));

const classifyV4Number = (address: number, text: string): AddressClass => {
  if (METADATA_V4.has(text)) return 'metadata';
  for (const [first, bits, cls] of V4_RANGES) if (inRange(address, first, bits)) return cls;
  return 'public';
};

const v4Text = (hi: number, lo: number): string => [hi >> 8, hi & 0xff, lo >> 8, lo & 0xff].join('.');

/** an IPv6 address as its 8 groups (a zone id is dropped), or null when it is not one */
export const ipv6Groups = (text: string): number[] | null => {
  let s = text.replace(/^\[|\]$/g, '').split('%')[0]!;
  if (!isIPv6(s)) return null;
  const lastColon = s.lastIndexOf(':');
  const tail = s.slice(lastColon + 1);
  if (tail.includes('.')) {
    const n = v4(tail);
    s = `${s.slice(0, lastColon + 1)}${Math.floor(n / 65536).toString(16)}:${(n % 65536).toString(16)}`;
  }
  const [head, rest] = s.split('::') as [string, string | undefined];
  const left = head ? head.split(':') : [];
  const right = rest === undefined ? [] : rest ? rest.split(':') : [];
  const zeros = rest === undefined ? [] : Array<string>(8 - left.length - right.length).fill('0');
  const groups = [...left, ...zeros, ...right].map((g) => parseInt(g, 16));
  return groups.length === 8 && groups.every((g) => g >= 0 && g <= 0xffff) ? groups : null;
};

const startsWith = (groups: readonly number[], prefix: readonly number[]): boolean =>
  prefix.every((g, i) => groups[i] === g);

/** the class of the IPv4 address an IPv6 form carries; a deprecated form of a public one is reserved */
const embedded = (hi: number, lo: number, deprecatedForm: boolean): AddressClass => {
  const text = v4Text(hi, lo);
  const cls = classifyV4Number(hi * 65536 + lo, text);
  return deprecatedForm && cls === 'public' ? 'reserved' : cls;
};

const classifyV6 = (g: readonly number[]): AddressClass => {
  if (METADATA_V6.some((m) => m.every((x, i) => g[i] === x))) return 'metadata';
  const [g0, g1, g2, g3, g4, g5, g6, g7] = g as [number, number, number, number, number, number, number, number];
  if (g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0 && g4 === 0) {
    if (g5 === 0 && g6 === 0 && g7 === 0) return 'unspecified';
    if (g5 === 0 && g6 === 0 && g7 === 1) return 'loopback';
    if (g5 === 0xffff) return embedded(g6, g7, false); // ::ffff:a.b.c.d, IPv4-mapped
    if (g5 === 0) return embedded(g6, g7, true); // ::a.b.c.d, IPv4-compatible (deprecated)
  }
  if (g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0 && g4 === 0xffff && g5 === 0) return embedded(g6, g7, true); // SIIT
  if (startsWith(g, [0x64, 0xff9b, 0, 0, 0, 0])) return embedded(g6, g7, false); // NAT64 well-known prefix
  if (startsWith(g, [0x2002])) return embedded(g1, g2, false); // 6to4
  if ((g0 & 0xfe00) === 0xfc00) return 'private'; // unique-local fc00::/7
  if ((g0 & 0xffc0) === 0xfe80) return 'link-local';
  if ((g0 & 0xff00) === 0xff00) return 'multicast';
  // global unicast is 2000::/3, less the IETF protocol assignments (Teredo included) and documentation
  if ((g0 & 0xe000) !== 0x2000) return 'reserved';
  if (g0 === 0x2001 && g1 < 0x0200) return 'reserved'; // 2001::/23
  if (g0 === 0x2001 && g1 === 0x0db8) return 'reserved'; // 2001:db8::/32
  if (g0 === 0x3fff && g1 < 0x1000) return 'reserved'; // 3fff::/20 documentation
  return 'public';
};

/** the class of an IP address written as text (IPv6 in brackets or with a zone id too); null for anything else */
export const classifyAddress = (text: string): AddressClass | null => {
  if (isIPv4(text)) return classifyV4Number(v4(text), text);
  const groups = ipv6Groups(text);
  return groups ? classifyV6(groups) : null;
};

export const isPublicAddress = (text: string): boolean => classifyAddress(text) === 'public';
