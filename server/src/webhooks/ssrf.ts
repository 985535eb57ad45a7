import { BlockList, isIP } from 'node:net';

/**
 * Addresses a webhook may not reach unless BATON_WEBHOOK_ALLOW_PRIVATE=1: private, loopback,
 * link-local (cloud metadata 169.254.169.254 among them), multicast, unspecified, CGNAT,
 * reserved, and their IPv6 forms, with IPv4-mapped IPv6 checked as the IPv4 it carries.
 */
const blocked = new BlockList();
const v4: [string, number, string][] = [
  ['0.0.0.0', 8, 'unspecified'],
  ['10.0.0.0', 8, 'private'],
  ['100.64.0.0', 10, 'CGNAT'],
  ['127.0.0.0', 8, 'loopback'],
  ['169.254.0.0', 16, 'link-local (cloud metadata)'],
  ['172.16.0.0', 12, 'private'],
  ['192.0.0.0', 24, 'IETF protocol assignments'],
  ['192.168.0.0', 16, 'private'],
  ['198.18.0.0', 15, 'benchmarking'],
  ['224.0.0.0', 4, 'multicast'],
  ['240.0.0.0', 4, 'reserved'],
];
const v6: [string, number, string][] = [
  ['::', 128, 'unspecified'],
  ['::1', 128, 'loopback'],
  ['fc00::', 7, 'unique local (private; fd00:ec2::254 is cloud metadata)'],
  ['fe80::', 10, 'link-local'],
  ['ff00::', 8, 'multicast'],
  ['64:ff9b::', 96, 'NAT64'],
  ['2001:db8::', 32, 'documentation'],
];
const ruleLists: { list: BlockList; rule: string; family: 'ipv4' | 'ipv6' }[] = [];
for (const [address, prefix, rule] of v4) {
  const list = new BlockList();
  list.addSubnet(address, prefix, 'ipv4');
  blocked.addSubnet(address, prefix, 'ipv4');
  ruleLists.push({ list, rule, family: 'ipv4' });
}
for (const [address, prefix, rule] of v6) {
  const list = new BlockList();
  list.addSubnet(address, prefix, 'ipv6');
  blocked.addSubnet(address, prefix, 'ipv6');
  ruleLists.push({ list, rule, family: 'ipv6' });
}

/** The IPv4 address an IPv4-mapped (::ffff:a.b.c.d or ::ffff:xxxx:xxxx) IPv6 address carries. */
function mappedV4(address: string): string | undefined {
  const lower = address.toLowerCase();
  const dotted = /^(?:0{0,4}:){0,5}:?ffff:(\d{1,3}(?:\.\d{1,3}){3})$/.exec(lower);
  if (dotted) return dotted[1];
  const hex = /^(?:0{0,4}:){0,5}:?ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(lower);
  if (!hex) return undefined;
  const hi = parseInt(hex[1]!, 16);
  const lo = parseInt(hex[2]!, 16);
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
}

/** The rule an IP address breaks ("loopback", ...), or undefined when it may be reached. */
export function blockedRule(address: string): string | undefined {
  const family = isIP(address);
  if (family === 0) return 'not an IP address';
  if (family === 6) {
    const inner = mappedV4(address);
    if (inner !== undefined) return blockedRule(inner);
  }
  const type = family === 4 ? 'ipv4' : 'ipv6';
  if (!blocked.check(address, type)) return undefined;
  return ruleLists.find((r) => r.family === type && r.list.check(address, type))?.rule ?? 'private';
}

export class BlockedAddressError extends Error {
  override name = 'BlockedAddressError';
  constructor(readonly host: string, readonly address: string, readonly rule: string) {
    super(`${host} resolves to ${address}: ${rule} addresses are refused (BATON_WEBHOOK_ALLOW_PRIVATE=1 allows them)`);
  }
}

/** The url's host without IPv6 brackets. */
export function hostOf(url: string): string {
  return new URL(url).hostname.replace(/^\[(.*)\]$/, '$1');
}
