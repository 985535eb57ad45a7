import { describe, expect, it } from 'vitest';
import { blockedRule, hostOf } from './ssrf';

describe('blockedRule', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['10.0.0.1', 'private'],
    ['172.16.5.4', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['169.254.169.254', 'link-local (cloud metadata)'],
    ['100.64.0.1', 'CGNAT'],
    ['0.0.0.0', 'unspecified'],
    ['224.0.0.251', 'multicast'],
    ['255.255.255.255', 'reserved'],
  ])('refuses IPv4 %s (%s)', (address, rule) => {
    expect(blockedRule(address)).toBe(rule);
  });

  it.each([
    ['::1', 'loopback'],
    ['::', 'unspecified'],
    ['fd00:ec2::254', 'unique local (private; fd00:ec2::254 is cloud metadata)'],
    ['fc00::1', 'unique local (private; fd00:ec2::254 is cloud metadata)'],
    ['fe80::1', 'link-local'],
    ['ff02::1', 'multicast'],
  ])('refuses IPv6 %s (%s)', (address, rule) => {
    expect(blockedRule(address)).toBe(rule);
  });

  it.each([
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:169.254.169.254', 'link-local (cloud metadata)'],
    ['::ffff:7f00:1', 'loopback'],
    ['::ffff:a00:1', 'private'],
    ['0:0:0:0:0:ffff:c0a8:101', 'private'],
  ])('checks IPv4-mapped IPv6 %s as the IPv4 it carries (%s)', (address, rule) => {
    expect(blockedRule(address)).toBe(rule);
  });

  it.each(['8.8.8.8', '1.1.1.1', '172.32.0.1', '100.128.0.1', '2606:4700:4700::1111', '::ffff:8.8.8.8'])('lets public %s through', (address) => {
    expect(blockedRule(address)).toBeUndefined();
  });

  it('takes the host out of a URL, IPv6 brackets removed', () => {
    expect(hostOf('http://[::1]:8080/x')).toBe('::1');
    expect(hostOf('https://Example.com/hook')).toBe('example.com');
  });
});
