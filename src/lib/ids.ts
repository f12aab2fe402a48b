import { randomFillSync } from 'node:crypto';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/**
 * Random bytes drawn from the system's generator 4 KB at a time and handed out once each, in order:
 * an id costs a slice of this pool rather than a call into the generator of its own (a job's rows take
 * several ids each). Nothing is handed out twice; a spent pool is filled again.
 */
const pool = Buffer.alloc(4096);
let used = pool.length;

/** Where `bytes` unused bytes of the pool start; a pool with fewer left is filled again first. */
function take(bytes: number): number {
  if (used + bytes > pool.length) {
    randomFillSync(pool);
    used = 0;
  }
  const at = used;
  used += bytes;
  return at;
}

function randomByte(): number {
  return pool[take(1)] as number;
}

/**
 * `bytes` random bytes as lower-case hex, two characters a byte, taken from the pool at once (a request
 * id is drawn for every request). Bytes left at the pool's end when it cannot hold `bytes` are skipped.
 */
export function randomHex(bytes: number): string {
  if (!Number.isInteger(bytes) || bytes < 1 || bytes > pool.length) {
    throw new RangeError(`randomHex: 1 to ${pool.length} bytes, not ${bytes}`);
  }
  const at = take(bytes);
  return pool.toString('hex', at, at + bytes);
}

/**
 * Random base62 text with `length` characters, drawn without modulo bias
 * (bytes >= 248 are rejected, so every character is equally likely).
 */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    const byte = randomByte();
    if (byte >= 248) continue;
    out += BASE62[byte % 62];
  }
  return out;
}

/** 22 base62 characters hold 130 bits: unguessable, so usable as a capability. */
export function newId(prefix: string, length = 22): string {
  return `${prefix}_${randomBase62(length)}`;
}
