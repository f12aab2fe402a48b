import { randomBytes } from 'node:crypto';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/**
 * Random base62 text with `length` characters, drawn without modulo bias
 * (bytes >= 248 are rejected, so every character is equally likely).
 */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte >= 248) continue;
      out += BASE62[byte % 62];
      if (out.length === length) break;
    }
  }
  return out;
}

/** 22 base62 characters hold 130 bits: unguessable, so usable as a capability. */
export function newId(prefix: string, length = 22): string {
  return `${prefix}_${randomBase62(length)}`;
}
