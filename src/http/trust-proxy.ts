import { isIP } from 'node:net';

/**
 * Which connecting peers may tell the service a client's address (`X-Forwarded-For`), as Fastify's
 * `trustProxy` takes it: false (nobody: the socket's address is the client's), a hop count, or a list
 * of addresses and CIDR ranges (and proxy-addr's names `loopback`, `linklocal`, `uniquelocal`).
 * With a list, a forwarded address counts only when the request came from a listed proxy, so a client
 * that connects directly cannot choose its own address and escape the per-address limits.
 */
export type TrustProxy = false | number | string[];

const NAMED_RANGES = new Set(['loopback', 'linklocal', 'uniquelocal']);
const MAX_HOPS = 10;

/** Parses TRUST_PROXY; throws an Error whose message says what is wrong with the value. */
export function parseTrustProxy(raw: string | undefined): TrustProxy {
  const value = raw?.trim() ?? '';
  if (value === '' || ['off', 'false', '0'].includes(value.toLowerCase())) return false;
  if (/^\d+$/.test(value)) {
    const hops = Number(value);
    if (hops > MAX_HOPS) throw new Error(`a hop count is at most ${MAX_HOPS}, got ${value}`);
    return hops;
  }
  if (['true', 'on', '*', 'all'].includes(value.toLowerCase())) {
    throw new Error(
      'trusting every peer would let any client choose its own address: list the proxies (addresses or CIDRs) or give a hop count',
    );
  }
  const entries = value
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
  for (const entry of entries) {
    if (!validEntry(entry)) {
      throw new Error(
        `"${entry}" is not an IP address, a CIDR range (10.0.0.0/8, fd00::/8), loopback, linklocal or uniquelocal`,
      );
    }
  }
  return entries;
}

function validEntry(entry: string): boolean {
  if (NAMED_RANGES.has(entry)) return true;
  const [address = '', prefix, ...rest] = entry.split('/');
  if (rest.length > 0) return false;
  const family = isIP(address);
  if (family === 0) return false;
  if (prefix === undefined) return true;
  if (!/^\d{1,3}$/.test(prefix)) return false;
  return Number(prefix) <= (family === 4 ? 32 : 128);
}

/**
 * The option Fastify takes. A hop count becomes a function (Fastify itself refuses a bare number):
 * the socket's peer and the next `hops - 1` addresses of `X-Forwarded-For` are proxies, so the
 * address `hops` back is the client's, whoever connected. Only safe when nothing but those proxies
 * can reach the service; a list of addresses checks the peer instead.
 */
export function fastifyTrustProxy(
  trust: TrustProxy,
): boolean | string[] | ((address: string, hop: number) => boolean) {
  if (typeof trust === 'number') return (_address, hop) => hop < trust;
  return trust;
}
