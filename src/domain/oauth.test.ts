import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  devicePollOutcome,
  formatUserCode,
  normalizeUserCode,
  parseScopes,
  pkceS256Matches,
  redirectUriProblem,
  type DeviceAuthorizationState,
} from './oauth.js';

describe('PKCE S256', () => {
  const verifier = 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk';
  const challenge = createHash('sha256').update(verifier).digest('base64url');

  it('accepts the verifier of the challenge and nothing else', () => {
    expect(pkceS256Matches(verifier, challenge)).toBe(true);
    expect(pkceS256Matches(`${verifier.slice(0, -1)}A`, challenge)).toBe(false);
    // The plain method (verifier = challenge) is not S256.
    expect(pkceS256Matches(challenge, challenge)).toBe(false);
  });

  it('refuses verifiers that are too short or carry other characters', () => {
    const short = 'abc';
    expect(pkceS256Matches(short, createHash('sha256').update(short).digest('base64url'))).toBe(false);
    const odd = `${'a'.repeat(42)}!`;
    expect(pkceS256Matches(odd, createHash('sha256').update(odd).digest('base64url'))).toBe(false);
  });
});

describe('scopes and redirect URIs', () => {
  it('parses space-separated scopes, refusing unknown ones', () => {
    expect(parseScopes('intakes:read intakes:write intakes:read')).toEqual(['intakes:read', 'intakes:write']);
    expect(parseScopes('')).toEqual([]);
    expect(parseScopes(undefined)).toEqual([]);
    expect(parseScopes('intakes:read root')).toBeUndefined();
  });

  it('allows https, loopback http and reverse-domain private-use schemes only (RFC 8252)', () => {
    for (const ok of [
      'https://app.example/cb',
      'http://127.0.0.1:8765/cb',
      'http://localhost/cb',
      'http://[::1]:9000/cb',
      'com.example.app:/oauth2redirect',
      'com.cursor.agent://oauth/cb',
    ]) {
      expect(redirectUriProblem(ok), ok).toBeUndefined();
    }
    for (const bad of [
      'http://evil.example/cb',
      'javascript:alert(1)',
      'https://a.example/cb#x',
      'not a uri',
      'data:text/html,x',
      // A bare word is claimable by any app on the device: the code could go to the wrong one.
      'cursor://oauth/cb',
      'myapp:/cb',
      'javascript.evil:alert(1)#x',
      'file:///etc/passwd',
      'ws://127.0.0.1/cb',
      'http://127.0.0.1.evil.example/cb',
      'com.:/cb',
    ]) {
      expect(redirectUriProblem(bad), bad).toBeDefined();
    }
  });
});

describe('user codes', () => {
  it('reads what people type back into the stored form', () => {
    expect(normalizeUserCode('bcdf-ghjk')).toBe('BCDFGHJK');
    expect(normalizeUserCode(' BCDF GHJK ')).toBe('BCDFGHJK');
    expect(formatUserCode('BCDFGHJK')).toBe('BCDF-GHJK');
    expect(normalizeUserCode('ABCD-EFGH')).toBeUndefined(); // vowels are never issued
    expect(normalizeUserCode('BCDF-GHJ')).toBeUndefined();
  });
});

describe('device polling (RFC 8628 §3.5)', () => {
  const base: DeviceAuthorizationState = {
    status: 'pending',
    expiresAtMs: 600_000,
    intervalSeconds: 5,
    lastPolledMs: null,
  };

  it('answers pending until approved, then issues', () => {
    expect(devicePollOutcome(base, 1000)).toEqual({ kind: 'error', error: 'authorization_pending' });
    expect(devicePollOutcome({ ...base, lastPolledMs: 1000 }, 6000)).toEqual({
      kind: 'error',
      error: 'authorization_pending',
    });
    expect(devicePollOutcome({ ...base, status: 'approved', lastPolledMs: 1000 }, 6000)).toEqual({
      kind: 'issue',
    });
  });

  it('tells a client polling faster than the interval to slow down by 5 seconds', () => {
    expect(devicePollOutcome({ ...base, lastPolledMs: 1000 }, 5999)).toEqual({
      kind: 'slow_down',
      intervalSeconds: 10,
    });
    expect(devicePollOutcome({ ...base, status: 'approved', lastPolledMs: 1000 }, 2000).kind).toBe(
      'slow_down',
    );
  });

  it('ends with denied, expired or already used codes', () => {
    expect(devicePollOutcome({ ...base, status: 'denied' }, 1000)).toEqual({
      kind: 'error',
      error: 'access_denied',
    });
    expect(devicePollOutcome({ ...base, status: 'approved' }, 600_000)).toEqual({
      kind: 'error',
      error: 'expired_token',
    });
    expect(devicePollOutcome({ ...base, status: 'consumed' }, 1000)).toEqual({
      kind: 'error',
      error: 'invalid_grant',
    });
  });
});
