import { describe, expect, it } from 'vitest';
import { classifyAddress, parseIpv6, urlRefusal, type AddressClass, type Resolver } from './ssrf.js';

const cases: [string, AddressClass][] = [
  // IPv4
  ['0.0.0.0', 'unspecified'],
  ['0.1.2.3', 'unspecified'],
  ['10.0.0.1', 'private'],
  ['10.255.255.255', 'private'],
  ['100.64.0.1', 'cgnat'],
  ['100.127.255.254', 'cgnat'],
  ['100.63.255.255', 'public'],
  ['100.128.0.0', 'public'],
  ['127.0.0.1', 'loopback'],
  ['127.255.0.9', 'loopback'],
  ['169.254.169.254', 'link_local'],
  ['169.254.0.1', 'link_local'],
  ['172.16.0.1', 'private'],
  ['172.31.255.255', 'private'],
  ['172.15.255.255', 'public'],
  ['172.32.0.0', 'public'],
  ['192.168.1.1', 'private'],
  ['192.0.0.8', 'reserved'],
  ['192.0.2.10', 'documentation'],
  ['198.18.0.1', 'reserved'],
  ['198.19.255.255', 'reserved'],
  ['198.51.100.7', 'documentation'],
  ['203.0.113.9', 'documentation'],
  ['224.0.0.1', 'multicast'],
  ['239.255.255.250', 'multicast'],
  ['240.0.0.1', 'reserved'],
  ['255.255.255.255', 'reserved'],
  ['8.8.8.8', 'public'],
  ['1.1.1.1', 'public'],
  ['93.184.216.34', 'public'],
  // IPv6
  ['::', 'unspecified'],
  ['::1', 'loopback'],
  ['[::1]', 'loopback'],
  ['0:0:0:0:0:0:0:1', 'loopback'],
  ['::ffff:127.0.0.1', 'ipv4_mapped'],
  ['::ffff:7f00:1', 'ipv4_mapped'],
  ['::ffff:8.8.8.8', 'ipv4_mapped'],
  ['::ffff:169.254.169.254', 'ipv4_mapped'],
  ['::127.0.0.1', 'reserved'],
  ['64:ff9b::127.0.0.1', 'loopback'],
  ['64:ff9b::a9fe:a9fe', 'link_local'],
  ['64:ff9b::8.8.8.8', 'public'],
  ['64:ff9b:1::1', 'reserved'],
  ['2002:7f00:1::1', 'loopback'],
  ['2002:c0a8:101::1', 'private'],
  ['2002:808:808::1', 'public'],
  ['2001:db8::1', 'documentation'],
  ['2001::1', 'reserved'],
  ['100::1', 'reserved'],
  ['fc00::1', 'unique_local'],
  ['fd12:3456:789a::1', 'unique_local'],
  ['fe80::1', 'link_local'],
  ['fe80::1%eth0', 'link_local'],
  ['febf::1', 'link_local'],
  ['fec0::1', 'reserved'],
  ['ff02::1', 'multicast'],
  ['2606:4700:4700::1111', 'public'],
  ['2a00:1450:4001:82b::200e', 'public'],
  ['4000::1', 'reserved'],
  // Not addresses
  ['example.com', 'invalid'],
  ['1.2.3', 'invalid'],
  ['256.1.1.1', 'invalid'],
  ['01.2.3.4', 'invalid'],
  ['1::2::3', 'invalid'],
  ['12345::', 'invalid'],
  ['1:2:3:4:5:6:7:8:9', 'invalid'],
  ['', 'invalid'],
];

describe('classifyAddress', () => {
  it.each(cases)('%s is %s', (address, expected) => {
    expect(classifyAddress(address)).toBe(expected);
  });

  it('parses IPv6 forms to the same groups', () => {
    const expected = [0, 0, 0, 0, 0, 0xffff, 0x7f00, 1];
    expect(parseIpv6('::ffff:127.0.0.1')).toEqual(expected);
    expect(parseIpv6('0:0:0:0:0:ffff:7f00:1')).toEqual(expected);
    expect(parseIpv6('::FFFF:7F00:0001')).toEqual(expected);
    expect(parseIpv6('1::')).toEqual([1, 0, 0, 0, 0, 0, 0, 0]);
    expect(parseIpv6('1:2:3:4:5:6:7::')).toEqual([1, 2, 3, 4, 5, 6, 7, 0]);
    expect(parseIpv6('1:2:3:4:5:6:7:8::')).toBeNull();
  });
});

describe('urlRefusal', () => {
  const strict = { production: false, allowPrivate: false };
  const resolveTo =
    (...addresses: string[]): Resolver =>
    () =>
      Promise.resolve(addresses);
  const failing: Resolver = () => Promise.reject(new Error('ENOTFOUND'));

  it('accepts a host that resolves to public addresses only', async () => {
    expect(
      await urlRefusal('https://hooks.example.com/x', strict, resolveTo('93.184.216.34')),
    ).toBeUndefined();
  });

  it('refuses a host when any of its addresses is not public, naming it', async () => {
    const reason = await urlRefusal(
      'https://rebind.example.com/x',
      strict,
      resolveTo('93.184.216.34', '10.0.0.5'),
    );
    expect(reason).toContain('10.0.0.5');
    expect(reason).toContain('private');
  });

  it('refuses IP literals without resolving them', async () => {
    expect(await urlRefusal('http://169.254.169.254/latest/meta-data', strict, failing)).toContain(
      'link-local',
    );
    expect(await urlRefusal('http://[::ffff:127.0.0.1]:8080/', strict, failing)).toContain('IPv4-mapped');
    expect(await urlRefusal('http://[fd00::1]/', strict, failing)).toContain('unique local');
    // WHATWG URL parsing turns other IPv4 spellings into the dotted quad first.
    expect(await urlRefusal('http://2130706433/', strict, failing)).toContain('loopback');
    expect(await urlRefusal('http://0x7f.1/', strict, failing)).toContain('loopback');
  });

  it('refuses unresolvable hosts, credentials and other schemes', async () => {
    expect(await urlRefusal('https://nowhere.invalid/', strict, failing)).toContain('could not be resolved');
    expect(await urlRefusal('https://u:p@hooks.example.com/', strict, resolveTo('8.8.8.8'))).toContain(
      'credentials',
    );
    expect(await urlRefusal('ftp://hooks.example.com/', strict, resolveTo('8.8.8.8'))).toContain('https');
    expect(await urlRefusal('not a url', strict)).toBe('not a valid URL');
  });

  it('requires https in production, even when private addresses are allowed', async () => {
    const production = { production: true, allowPrivate: true };
    expect(await urlRefusal('http://127.0.0.1:9/', production)).toBe('the URL must use https');
    expect(await urlRefusal('https://127.0.0.1:9/', production)).toBeUndefined();
  });

  it('lets everything through with WEBHOOK_ALLOW_PRIVATE, without resolving', async () => {
    expect(
      await urlRefusal('http://localhost:3000/hook', { production: false, allowPrivate: true }, failing),
    ).toBe(undefined);
  });
});
