import { randomBase62 } from '../../lib/ids.js';
import { sha256Hex } from '../../lib/secrets.js';

export type KeyMode = 'live' | 'test';

/** 43 base62 characters carry 256 bits (≥ 192 required). */
const SECRET_LENGTH = 43;
export const API_KEY_PATTERN = /^svc_(live|test)_[0-9A-Za-z]{43}$/;

export interface GeneratedKey {
  secret: string;
  hash: string;
  prefix: string;
}

/**
 * A new API key. Only its SHA-256 is stored: the secret is 256 random bits, so a fast hash
 * cannot be brute-forced, and lookups stay one indexed read.
 */
export function generateApiKey(mode: KeyMode): GeneratedKey {
  const secret = `svc_${mode}_${randomBase62(SECRET_LENGTH)}`;
  return { secret, hash: hashApiKey(secret), prefix: secret.slice(0, `svc_${mode}_`.length + 4) };
}

export function hashApiKey(secret: string): string {
  return sha256Hex(secret);
}
