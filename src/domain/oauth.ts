import { createHash } from 'node:crypto';
import { SCOPES, type Scope } from './scopes.js';

/**
 * Pure rules of agent sign-in: OAuth 2.1 (PKCE S256, redirect URIs, scopes) and the device
 * authorization grant (RFC 8628: user codes, polling outcomes).
 */

/** RFC 7636: the challenge is BASE64URL(SHA256(verifier)); verifiers are 43–128 unreserved characters. */
export function pkceS256Matches(verifier: string, challenge: string): boolean {
  if (!/^[A-Za-z0-9\-._~]{43,128}$/.test(verifier)) return false;
  return createHash('sha256').update(verifier).digest('base64url') === challenge;
}

export function isPkceChallenge(value: string): boolean {
  return /^[A-Za-z0-9_-]{43}$/.test(value);
}

/** Space-separated scope text → our scopes; undefined when it names one we do not have. */
export function parseScopes(text: string | undefined): Scope[] | undefined {
  const names = (text ?? '').split(' ').filter(Boolean);
  if (!names.every((name) => (SCOPES as readonly string[]).includes(name))) return undefined;
  return [...new Set(names as Scope[])];
}

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/** RFC 8252 §7.1: a private-use scheme is a reverse domain name the app's publisher controls. */
const REVERSE_DOMAIN_SCHEME = /^[a-z][a-z0-9-]*(\.[a-z0-9-]+)+$/;

/**
 * Redirect URIs a client may register (OAuth 2.1 §2.3.1 / RFC 8252): https anywhere; http only to a
 * loopback address (native apps, CLI tools); a private-use scheme of a native app in reverse-domain form
 * (`com.example.app:/callback`). A bare word (`myapp://`) is not: any app may claim it, and the code
 * would reach whichever did. No fragment.
 */
export function redirectUriProblem(uri: string): string | undefined {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return `${uri} is not an absolute URI`;
  }
  if (url.hash) return `${uri} must not have a fragment`;
  const scheme = url.protocol.slice(0, -1);
  if (scheme === 'https') return undefined;
  if (scheme === 'http') {
    return LOOPBACK_HOSTS.has(url.hostname)
      ? undefined
      : `${uri}: http is allowed only to a loopback address`;
  }
  return REVERSE_DOMAIN_SCHEME.test(scheme)
    ? undefined
    : `${uri}: a custom scheme must be a reverse domain name the app controls (e.g. com.example.app:/callback); otherwise use https or http to a loopback address`;
}

/** RFC 8628 §6.1: consonants only (no vowels, so no words), no look-alikes; 20^8 ≈ 2^34.6 codes. */
export const USER_CODE_ALPHABET = 'BCDFGHJKLMNPQRSTVWXZ';
export const USER_CODE_LENGTH = 8;

/** XXXX-XXXX for display. */
export function formatUserCode(code: string): string {
  return `${code.slice(0, 4)}-${code.slice(4)}`;
}

/** What a person typed (any case, dashes, spaces) → the stored form, or undefined when it cannot be one. */
export function normalizeUserCode(typed: string): string | undefined {
  const letters = typed.toUpperCase().replace(/[^A-Z]/g, '');
  if (letters.length !== USER_CODE_LENGTH) return undefined;
  return [...letters].every((ch) => USER_CODE_ALPHABET.includes(ch)) ? letters : undefined;
}

export interface DeviceAuthorizationState {
  /** pending | approved | denied | consumed, as stored. */
  status: string;
  expiresAtMs: number;
  intervalSeconds: number;
  lastPolledMs: number | null;
}

/** RFC 8628 §3.5 answers to a poll, and `issue` when the token may be handed out now. */
export type DevicePollOutcome =
  | { kind: 'issue' }
  | { kind: 'error'; error: 'authorization_pending' | 'access_denied' | 'expired_token' | 'invalid_grant' }
  | { kind: 'slow_down'; intervalSeconds: number };

/** How much a too-eager client's interval grows (RFC 8628 §3.5: "by 5 seconds"). */
export const SLOW_DOWN_STEP_SECONDS = 5;

export function devicePollOutcome(state: DeviceAuthorizationState, nowMs: number): DevicePollOutcome {
  if (state.status === 'consumed') return { kind: 'error', error: 'invalid_grant' };
  if (nowMs >= state.expiresAtMs) return { kind: 'error', error: 'expired_token' };
  if (state.status === 'denied') return { kind: 'error', error: 'access_denied' };
  if (state.lastPolledMs !== null && nowMs - state.lastPolledMs < state.intervalSeconds * 1000) {
    return { kind: 'slow_down', intervalSeconds: state.intervalSeconds + SLOW_DOWN_STEP_SECONDS };
  }
  if (state.status === 'approved') return { kind: 'issue' };
  return { kind: 'error', error: 'authorization_pending' };
}
