import { describe, expect, it } from 'vitest';
import type { AddressClass } from '../../../infra/security/addresses';
import { classifyAddress, ipv6Groups } from '../../../infra/security/addresses';

/** what the outbound guard lets a tenant's destination reach: public addresses only (DESIGN.md mechanism 11) */
const TABLE: [string, AddressClass][] = [
  // IPv4
  ['0.0.0.0', 'unspecified'],
  ['0.1.2.3', 'unspecified'],
  ['127.0.0.1', 'loopback'],
  ['127.255.255.254', 'loopback'],
  ['10.0.0.1', 'private'],
  ['10.255.255.53', 'private'],
  ['172.16.0.1', 'private'],
  ['172.31.255.255', 'private'],
  ['172.32.0.1', 'public'],
  ['172.15.255.255', 'public'],
  ['192.168.1.1', 'private'],
  ['100.64.0.1', 'shared'],
  ['100.127.255.255', 'shared'],
  ['100.128.0.1', 'public'],
  ['100.100.100.200', 'metadata'],
  ['169.254.169.254', 'metadata'],
  ['169.254.170.2', 'metadata'],
  ['169.254.1.1', 'link-local'],
  ['192.0.0.192', 'metadata'],
  ['192.0.0.8', 'reserved'],
  ['192.0.2.10', 'reserved'],
  ['198.18.0.1', 'reserved'],
  ['198.51.100.7', 'reserved'],
  ['203.0.113.7', 'reserved'],
  ['192.88.99.1', 'reserved'],
  ['224.0.0.1', 'multicast'],
  ['239.255.255.250', 'multicast'],
  ['240.0.0.1', 'reserved'],
  ['255.255.255.255', 'broadcast'],
  ['8.8.8.8', 'public'],
  ['93.184.215.14', 'public'],
  ['1.1.1.1', 'public'],
  ['223.255.255.255', 'public'],
  // IPv6
  ['::', 'unspecified'],
  ['::1', 'loopback'],
  ['[::1]', 'loopback'],
  ['0:0:0:0:0:0:0:1', 'loopback'],
  ['fe80::1', 'link-local'],
  ['fe80::1%eth0', 'link-local'],
  ['febf::1', 'link-local'],
  ['fc00::1', 'private'],
  ['fd12:3456:789a::1', 'private'],
  ['fd00:ec2::254', 'metadata'],
  ['fd00:ec2::23', 'metadata'],
  ['ff02::1', 'multicast'],
  ['ff0e::1', 'multicast'],
  ['fec0::1', 'reserved'],
  ['100::1', 'reserved'],
  ['2001:db8::1', 'reserved'],
  ['2001::1', 'reserved'], // Teredo
  ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'reserved'], // Teredo, to any IPv4 address
  ['2001:10::1', 'reserved'], // ORCHID
  ['3fff::1', 'reserved'], // documentation (RFC 9637)
  ['64:ff9b:1::1', 'reserved'], // local-use NAT64
  ['2606:4700:4700::1111', 'public'],
  ['2a00:1450:4001:80b::200e', 'public'],
  // IPv4 inside IPv6
  ['::ffff:127.0.0.1', 'loopback'],
  ['::ffff:7f00:1', 'loopback'],
  ['::ffff:10.0.0.1', 'private'],
  ['::ffff:169.254.169.254', 'metadata'],
  ['::ffff:a9fe:a9fe', 'metadata'],
  ['::ffff:0.0.0.0', 'unspecified'],
  ['::ffff:8.8.8.8', 'public'],
  ['[::ffff:192.168.0.1]', 'private'],
  ['::127.0.0.1', 'loopback'], // IPv4-compatible (deprecated)
  ['::7f00:1', 'loopback'],
  ['::8.8.8.8', 'reserved'],
  ['::ffff:0:10.0.0.1', 'private'], // SIIT
  ['::ffff:0:8.8.8.8', 'reserved'],
  ['64:ff9b::127.0.0.1', 'loopback'], // NAT64
  ['64:ff9b::a9fe:a9fe', 'metadata'],
  ['64:ff9b::808:808', 'public'],
  ['2002:7f00:1::1', 'loopback'], // 6to4
  ['2002:a00:1::', 'private'],
  ['2002:a9fe:a9fe::1', 'metadata'],
  ['2002:808:808::1', 'public'],
];

describe('an address a tenant gave', () => {
  it.each(TABLE)('%s is %s', (address, expected) => {
    expect(classifyAddress(address)).toBe(expected);
  });

  it('is no address when it is a name or a malformed literal (the guard resolves names first)', () => {
    for (const text of ['localhost', 'example.com', '127.1', '0x7f000001', '2130706433', '1.2.3.4.5', ':::1', ''])
      expect(classifyAddress(text), text).toBeNull();
  });
});

describe('an IPv6 address written any way', () => {
  it('reads as its 8 groups', () => {
    expect(ipv6Groups('::')).toEqual([0, 0, 0, 0, 0, 0, 0, 0]);
    expect(ipv6Groups('1::')).toEqual([1, 0, 0, 0, 0, 0, 0, 0]);
    expect(ipv6Groups('::ffff:1.2.3.4')).toEqual([0, 0, 0, 0, 0, 0xffff, 0x0102, 0x0304]);
    expect(ipv6Groups('1:2:3:4:5:6:7:8')).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(ipv6Groups('1:2:3:4:5:6:1.2.3.4')).toEqual([1, 2, 3, 4, 5, 6, 0x0102, 0x0304]);
    expect(ipv6Groups('fe80::1%25eth0')).toEqual([0xfe80, 0, 0, 0, 0, 0, 0, 1]);
    expect(ipv6Groups('1.2.3.4')).toBeNull();
  });
});
