import { deriveKey, decryptSecret, encryptSecret } from '../../lib/crypto.js';
import { randomBase62 } from '../../lib/ids.js';
import { hmacHex } from '../../lib/secrets.js';

/**
 * Webhook signatures (CONTRACT "Signature header"): `t=<unix>,v1=<hex>[,v1=<hex>…]`, where each v1 is
 * the lowercase hex HMAC-SHA256 of `<t>.<raw body>` keyed with a secret string's UTF-8 bytes, whole
 * (`whsec_` prefix included). Byte-compatible with Stripe's scheme. During the 24 hours after a
 * rotation there is one v1 per secret, the new one first.
 */

export const SIGNATURE_HEADERS = ['Service-Signature', 'X-Service-Signature'] as const;
export const SECRET_PREFIX = 'whsec_';
/** The shape of a secret supplied at creation or rotation: the prefix, then 24 to 128 URL-safe characters. */
export const SECRET_PATTERN = /^whsec_[A-Za-z0-9_+/=-]{24,128}$/;

export function generateWebhookSecret(): string {
  return `${SECRET_PREFIX}${randomBase62(32)}`;
}

export function signatureHeader(rawBody: string, secrets: readonly string[], unixSeconds: number): string {
  const t = Math.floor(unixSeconds);
  const signed = `${t}.${rawBody}`;
  return [`t=${t}`, ...secrets.map((secret) => `v1=${hmacHex(secret, signed)}`)].join(',');
}

/** Secrets are kept sealed with a key derived from SECRET_KEY, bound to their endpoint. */
export interface SecretBox {
  seal(endpointId: string, secret: string): string;
  open(endpointId: string, sealed: string): string;
}

/** Opened secrets kept per box: every attempt signs, and opening costs a cipher's set-up each time. */
const OPENED_SECRETS_KEPT = 1_000;

export function secretBox(secretKey: string): SecretBox {
  const key = deriveKey(secretKey, 'webhook-signing-secret');
  const context = (endpointId: string) => `webhook:${endpointId}`;
  // Keyed by the sealed text too: a rotation seals a new secret, which is opened anew.
  const opened = new Map<string, string>();
  return {
    seal: (endpointId, secret) => encryptSecret(key, secret, context(endpointId)),
    open: (endpointId, sealed) => {
      const cacheKey = `${endpointId}\u0000${sealed}`;
      let secret = opened.get(cacheKey);
      if (secret === undefined) {
        secret = decryptSecret(key, sealed, context(endpointId));
        if (opened.size >= OPENED_SECRETS_KEPT) opened.clear();
        opened.set(cacheKey, secret);
      }
      return secret;
    },
  };
}
