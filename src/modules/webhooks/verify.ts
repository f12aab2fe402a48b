import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * For receivers: checks the `Service-Signature` (or `X-Service-Signature`) header of a webhook
 * request, as SPEC's "Signature" section says. Self-contained (node:crypto only), so it can be
 * copied into a receiver as it is.
 *
 * ```ts
 * if (!verifySignature(rawBody, request.headers['service-signature'], process.env.WEBHOOK_SECRET)) {
 *   return reply.code(400).send(); // discard the request
 * }
 * ```
 */

export interface VerifyOptions {
  /** Largest accepted difference between now and the header's t, in seconds. Default 300. */
  toleranceSeconds?: number;
  /** "Now" in Unix seconds; default the system clock. */
  nowSeconds?: number;
}

export type VerifyFailure =
  'missing_header' | 'malformed_header' | 'timestamp_outside_tolerance' | 'no_matching_signature';

export type VerifyResult = { valid: true; timestamp: number } | { valid: false; reason: VerifyFailure };

export const DEFAULT_TOLERANCE_SECONDS = 300;

/**
 * Whether the header signs this raw body with one of the secrets (several during a rotation), with a
 * timestamp within the tolerance. rawBody must be the exact bytes received, not re-serialized JSON.
 */
export function verifySignature(
  rawBody: string | Uint8Array,
  header: string | readonly string[] | null | undefined,
  secret: string | readonly string[],
  options: VerifyOptions = {},
): boolean {
  return checkSignature(rawBody, header, secret, options).valid;
}

/** verifySignature with the reason of a failure (for logs; never tell it to the sender). */
export function checkSignature(
  rawBody: string | Uint8Array,
  header: string | readonly string[] | null | undefined,
  secret: string | readonly string[],
  options: VerifyOptions = {},
): VerifyResult {
  const value = typeof header === 'string' ? header : header?.[0];
  if (!value) return { valid: false, reason: 'missing_header' };
  const parsed = parseSignatureHeader(value);
  if (!parsed) return { valid: false, reason: 'malformed_header' };
  const tolerance = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  const now = options.nowSeconds ?? Math.floor(Date.now() / 1000);
  if (Math.abs(now - parsed.timestamp) > tolerance) {
    return { valid: false, reason: 'timestamp_outside_tolerance' };
  }
  const body = typeof rawBody === 'string' ? Buffer.from(rawBody, 'utf8') : Buffer.from(rawBody);
  const signed = Buffer.concat([Buffer.from(`${parsed.timestamp}.`, 'utf8'), body]);
  const secrets = typeof secret === 'string' ? [secret] : secret;
  for (const key of secrets) {
    const expected = createHmac('sha256', key).update(signed).digest();
    for (const candidate of parsed.signatures) {
      if (candidate.length === expected.length && timingSafeEqual(candidate, expected)) {
        return { valid: true, timestamp: parsed.timestamp };
      }
    }
  }
  return { valid: false, reason: 'no_matching_signature' };
}

/** `t=<unix>,v1=<hex>[,v1=<hex>…]`; other schemes are ignored, as the format allows new ones. */
export function parseSignatureHeader(value: string): { timestamp: number; signatures: Buffer[] } | null {
  let timestamp: number | undefined;
  const signatures: Buffer[] = [];
  for (const part of value.split(',')) {
    const at = part.indexOf('=');
    if (at < 0) continue;
    const key = part.slice(0, at).trim();
    const item = part.slice(at + 1).trim();
    if (key === 't') {
      if (!/^\d{1,12}$/.test(item)) return null;
      timestamp = Number(item);
    } else if (key === 'v1' && /^[0-9a-f]{64}$/i.test(item)) {
      signatures.push(Buffer.from(item, 'hex'));
    }
  }
  if (timestamp === undefined || signatures.length === 0) return null;
  return { timestamp, signatures };
}
