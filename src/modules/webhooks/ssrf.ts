import dns from 'node:dns';
import type { LookupAddress, LookupAllOptions, LookupOptions } from 'node:dns';

/**
 * SSRF protection for webhook URLs: which addresses a webhook may reach. A URL is refused when any
 * address its host resolves to is not public unicast (a host resolving to one public and one private
 * address is refused too: which one is used is not ours to choose). The check runs at registration
 * and again at connect time (guardedLookup), on the address actually connected to, so DNS rebinding
 * between the check and the connection cannot slip a private address in.
 */

export type AddressClass =
  | 'public'
  | 'unspecified'
  | 'loopback'
  | 'private'
  | 'link_local'
  | 'cgnat'
  | 'unique_local'
  | 'ipv4_mapped'
  | 'multicast'
  | 'documentation'
  | 'reserved'
  | 'invalid';

/** [first address, prefix length, class]; the first match wins, so specific ranges come first. */
type Range4 = readonly [string, number, AddressClass];

const IPV4_RANGES: readonly Range4[] = [
  ['0.0.0.0', 8, 'unspecified'],
  ['10.0.0.0', 8, 'private'],
  ['100.64.0.0', 10, 'cgnat'],
  ['127.0.0.0', 8, 'loopback'],
  ['169.254.0.0', 16, 'link_local'],
  ['172.16.0.0', 12, 'private'],
  ['192.0.0.0', 24, 'reserved'],
  ['192.0.2.0', 24, 'documentation'],
  ['192.88.99.0', 24, 'reserved'],
  ['192.168.0.0', 16, 'private'],
  ['198.18.0.0', 15, 'reserved'],
  ['198.51.100.0', 24, 'documentation'],
  ['203.0.113.0', 24, 'documentation'],
  ['224.0.0.0', 4, 'multicast'],
  ['240.0.0.0', 4, 'reserved'],
];

/** IPv6 ranges, as 8 groups of 16 bits; ranges that embed an IPv4 address are handled in code. */
type Range6 = readonly [string, number, AddressClass];

const IPV6_RANGES: readonly Range6[] = [
  ['::', 128, 'unspecified'],
  ['::1', 128, 'loopback'],
  ['::ffff:0:0', 96, 'ipv4_mapped'],
  ['::ffff:0:0:0', 96, 'reserved'],
  ['::', 96, 'reserved'],
  ['64:ff9b:1::', 48, 'reserved'],
  ['100::', 64, 'reserved'],
  ['2001::', 23, 'reserved'],
  ['2001:db8::', 32, 'documentation'],
  ['3fff::', 20, 'documentation'],
  ['fc00::', 7, 'unique_local'],
  ['fe80::', 10, 'link_local'],
  ['fec0::', 10, 'reserved'],
  ['ff00::', 8, 'multicast'],
];

export function parseIpv4(text: string): number | null {
  const parts = text.split('.');
  if (parts.length !== 4) return null;
  let value = 0;
  for (const part of parts) {
    if (!/^(0|[1-9]\d{0,2})$/.test(part)) return null;
    const octet = Number(part);
    if (octet > 255) return null;
    value = value * 256 + octet;
  }
  return value;
}

/** An IPv6 address as 8 numbers of 16 bits, or null. Accepts `::` compression, a zone id and a dotted IPv4 tail. */
export function parseIpv6(input: string): number[] | null {
  let text = input.startsWith('[') && input.endsWith(']') ? input.slice(1, -1) : input;
  const zone = text.indexOf('%');
  if (zone >= 0) text = text.slice(0, zone);
  if (!text.includes(':')) return null;
  const lastColon = text.lastIndexOf(':');
  const lastPart = text.slice(lastColon + 1);
  if (lastPart.includes('.')) {
    // A dotted IPv4 tail (::ffff:127.0.0.1) is the last two groups written another way.
    const v4 = parseIpv4(lastPart);
    if (v4 === null) return null;
    const high = Math.floor(v4 / 65536).toString(16);
    const low = (v4 % 65536).toString(16);
    text = `${text.slice(0, lastColon + 1)}${high}:${low}`;
  }
  const halves = text.split('::');
  if (halves.length > 2) return null;
  const head = parseGroups(halves[0] ?? '');
  const rest = halves.length === 2 ? parseGroups(halves[1] ?? '') : [];
  if (head === null || rest === null) return null;
  if (halves.length === 1) return head.length === 8 ? head : null;
  const missing = 8 - head.length - rest.length;
  if (missing < 1) return null;
  return [...head, ...new Array<number>(missing).fill(0), ...rest];
}

function parseGroups(part: string): number[] | null {
  if (part === '') return [];
  const out: number[] = [];
  for (const group of part.split(':')) {
    if (!/^[0-9a-fA-F]{1,4}$/.test(group)) return null;
    out.push(parseInt(group, 16));
  }
  return out;
}

function inRange4(value: number, base: string, prefix: number): boolean {
  const start = parseIpv4(base);
  if (start === null) return false;
  const size = 2 ** (32 - prefix);
  return value >= start && value < start + size;
}

function inRange6(groups: readonly number[], base: string, prefix: number): boolean {
  const start = parseIpv6(base);
  if (start === null) return false;
  let bits = prefix;
  for (let i = 0; i < 8 && bits > 0; i++) {
    const take = Math.min(16, bits);
    const mask = (0xffff << (16 - take)) & 0xffff;
    if (((groups[i] ?? 0) & mask) !== ((start[i] ?? 0) & mask)) return false;
    bits -= take;
  }
  return true;
}

export function classifyIpv4(value: number): AddressClass {
  for (const [base, prefix, kind] of IPV4_RANGES) if (inRange4(value, base, prefix)) return kind;
  return 'public';
}

function embeddedIpv4(high: number, low: number): AddressClass {
  return classifyIpv4(high * 65536 + low);
}

export function classifyIpv6(groups: readonly number[]): AddressClass {
  for (const [base, prefix, kind] of IPV6_RANGES) if (inRange6(groups, base, prefix)) return kind;
  // NAT64 (64:ff9b::/96) and 6to4 (2002::/16) carry an IPv4 address: it decides.
  if (inRange6(groups, '64:ff9b::', 96)) return embeddedIpv4(groups[6] ?? 0, groups[7] ?? 0);
  if (inRange6(groups, '2002::', 16)) return embeddedIpv4(groups[1] ?? 0, groups[2] ?? 0);
  // Global unicast is 2000::/3; nothing outside it is reachable on the public internet.
  return inRange6(groups, '2000::', 3) ? 'public' : 'reserved';
}

/** The class of an IP address literal (IPv4 dotted quad or IPv6, brackets and zone id allowed). */
export function classifyAddress(address: string): AddressClass {
  const v4 = parseIpv4(address);
  if (v4 !== null) return classifyIpv4(v4);
  const v6 = parseIpv6(address);
  if (v6 !== null) return classifyIpv6(v6);
  return 'invalid';
}

export function isPublicAddress(address: string): boolean {
  return classifyAddress(address) === 'public';
}

const CLASS_WORDS: Record<AddressClass, string> = {
  public: 'a public address',
  unspecified: 'an unspecified address',
  loopback: 'a loopback address',
  private: 'a private address',
  link_local: 'a link-local address',
  cgnat: 'a carrier-grade NAT address',
  unique_local: 'a unique local (ULA) address',
  ipv4_mapped: 'an IPv4-mapped IPv6 address',
  multicast: 'a multicast address',
  documentation: 'a documentation address',
  reserved: 'a reserved address',
  invalid: 'an invalid address',
};

/** Thrown (or passed to a lookup callback) when a webhook host is or resolves to a refused address. */
export class AddressRefusedError extends Error {
  readonly code = 'ERR_WEBHOOK_ADDRESS_REFUSED';
  constructor(
    readonly host: string,
    readonly address: string,
    readonly addressClass: AddressClass,
  ) {
    super(
      host === address
        ? `${address} is ${CLASS_WORDS[addressClass]}; webhooks may only reach public addresses`
        : `${host} resolves to ${address}, ${CLASS_WORDS[addressClass]}; webhooks may only reach public addresses`,
    );
    this.name = 'AddressRefusedError';
  }
}

/** The first refused address among those a host resolved to, as an error; undefined when all are public. */
export function refusedAmong(host: string, addresses: readonly string[]): AddressRefusedError | undefined {
  for (const address of addresses) {
    const kind = classifyAddress(address);
    if (kind !== 'public') return new AddressRefusedError(host, address, kind);
  }
  return undefined;
}

/** The host of a URL without IPv6 brackets. */
export function hostOf(url: URL): string {
  return url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
}

export interface UrlPolicy {
  /** NODE_ENV=production: https only. */
  production: boolean;
  /** WEBHOOK_ALLOW_PRIVATE: loopback and private addresses allowed (development, tests). */
  allowPrivate: boolean;
}

export type Resolver = (host: string) => Promise<string[]>;

export const systemResolver: Resolver = async (host) =>
  (await dns.promises.lookup(host, { all: true, verbatim: true })).map((entry) => entry.address);

/**
 * Whether a webhook may be sent to this URL now: the scheme, then (unless private addresses are
 * allowed) every address the host resolves to. Returns the reason it may not, or undefined.
 */
export async function urlRefusal(
  raw: string,
  policy: UrlPolicy,
  resolve: Resolver = systemResolver,
): Promise<string | undefined> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'not a valid URL';
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'the URL must use https (or http)';
  if (policy.production && url.protocol !== 'https:') return 'the URL must use https';
  if (url.username || url.password) return 'the URL must not contain credentials';
  if (policy.allowPrivate) return undefined;
  const host = hostOf(url);
  if (classifyAddress(host) !== 'invalid') return refusedAmong(host, [host])?.message;
  let addresses: string[];
  try {
    addresses = await resolve(host);
  } catch {
    return `${host} could not be resolved`;
  }
  if (addresses.length === 0) return `${host} could not be resolved`;
  return refusedAmong(host, addresses)?.message;
}

type LookupCallback = (
  error: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

/** dns.lookup with `all: true`; injectable so tests can make a name resolve anywhere without DNS. */
export type LookupAll = (
  hostname: string,
  options: LookupAllOptions,
  callback: (error: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
) => void;

const systemLookupAll: LookupAll = (hostname, options, callback) => dns.lookup(hostname, options, callback);

/**
 * A `lookup` for net/tls.connect that refuses non-public addresses while `allowPrivate()` is false.
 * Connections then go to the very address that was checked (no second resolution).
 */
export function guardedLookup(allowPrivate: () => boolean, resolveAll: LookupAll = systemLookupAll) {
  return (hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    const all: LookupAllOptions = { ...options, all: true };
    resolveAll(hostname, all, (error, addresses) => {
      if (error) return callback(error, []);
      if (!allowPrivate()) {
        const refused = refusedAmong(
          hostname,
          addresses.map((a) => a.address),
        );
        if (refused) return callback(refused, []);
      }
      if (options.all) return callback(null, addresses);
      const first = addresses[0];
      if (!first)
        return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), []);
      callback(null, first.address, first.family);
    });
  };
}
