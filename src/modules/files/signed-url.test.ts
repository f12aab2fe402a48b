import { createHmac, hkdfSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  attachmentDisposition,
  FILE_URL_TTL_SECONDS,
  signFileUrl,
  verifyFileSignature,
} from './signed-url.js';

const SECRET = 'k'.repeat(40);
const NOW = Date.UTC(2026, 0, 15, 12, 0, 0, 250);

function parts(url: string) {
  const parsed = new URL(url);
  return {
    parsed,
    expires: parsed.searchParams.get('expires') ?? undefined,
    sig: parsed.searchParams.get('sig') ?? undefined,
  };
}

describe('signFileUrl', () => {
  it('builds {base}/files/{id}?expires=<now+24h>&sig=<HMAC-SHA256 of "id.expires">', () => {
    const signed = signFileUrl('https://api.example.com/', SECRET, 'file_abc123', NOW);
    const { parsed, expires, sig } = parts(signed.url);
    expect(parsed.origin + parsed.pathname).toBe('https://api.example.com/files/file_abc123');
    const expectedExpires = Math.floor(NOW / 1000) + 86_400;
    expect(expires).toBe(String(expectedExpires));
    expect(signed.expires_at).toBe('2026-01-16T12:00:00.000Z');
    // Independent computation: HKDF-SHA256(secret, salt "intake-service", info "file-urls") as the HMAC key.
    const key = Buffer.from(hkdfSync('sha256', SECRET, 'intake-service', 'file-urls', 32));
    const expectedSig = createHmac('sha256', key).update(`file_abc123.${expectedExpires}`).digest('hex');
    expect(sig).toBe(expectedSig);
    expect(FILE_URL_TTL_SECONDS).toBe(86_400);
  });

  it('gives different signatures for different secrets and files', () => {
    const a = parts(signFileUrl('http://x', SECRET, 'file_a', NOW).url).sig;
    const b = parts(signFileUrl('http://x', SECRET, 'file_b', NOW).url).sig;
    const c = parts(signFileUrl('http://x', 'z'.repeat(40), 'file_a', NOW).url).sig;
    expect(new Set([a, b, c]).size).toBe(3);
  });
});

describe('verifyFileSignature', () => {
  const { expires, sig } = parts(signFileUrl('http://x', SECRET, 'file_abc', NOW).url);

  it('accepts its own signature until it expires, and not at or after expiry', () => {
    expect(verifyFileSignature(SECRET, 'file_abc', expires, sig, NOW)).toBe(true);
    const expiryMs = Number(expires) * 1000;
    expect(verifyFileSignature(SECRET, 'file_abc', expires, sig, expiryMs - 1)).toBe(true);
    expect(verifyFileSignature(SECRET, 'file_abc', expires, sig, expiryMs)).toBe(false);
    expect(verifyFileSignature(SECRET, 'file_abc', expires, sig, expiryMs + 60_000)).toBe(false);
  });

  it('rejects another file, another secret, a changed expiry and a tampered signature', () => {
    expect(verifyFileSignature(SECRET, 'file_abd', expires, sig, NOW)).toBe(false);
    expect(verifyFileSignature('z'.repeat(40), 'file_abc', expires, sig, NOW)).toBe(false);
    expect(verifyFileSignature(SECRET, 'file_abc', String(Number(expires) + 3600), sig, NOW)).toBe(false);
    const flipped = (sig ?? '').replace(/^./, (c) => (c === '0' ? '1' : '0'));
    expect(verifyFileSignature(SECRET, 'file_abc', expires, flipped, NOW)).toBe(false);
  });

  it('rejects missing and malformed values without throwing', () => {
    const cases: [string | undefined, string | undefined][] = [
      [undefined, sig],
      [expires, undefined],
      ['', sig],
      ['12.5', sig],
      ['-1', sig],
      ['1e12', sig],
      [expires, (sig ?? '').toUpperCase()],
      [expires, (sig ?? '').slice(0, 63)],
      [expires, `${sig ?? ''}00`],
      [expires, 'zz'.repeat(32)],
    ];
    for (const [e, s] of cases)
      expect(verifyFileSignature(SECRET, 'file_abc', e, s, NOW), `${e} ${s}`).toBe(false);
  });
});

describe('attachmentDisposition', () => {
  it('gives an ASCII fallback and the exact UTF-8 name', () => {
    expect(attachmentDisposition('logo.png')).toBe(
      `attachment; filename="logo.png"; filename*=UTF-8''logo.png`,
    );
    expect(attachmentDisposition('Café été.pdf')).toBe(
      `attachment; filename="Cafe ete.pdf"; filename*=UTF-8''Caf%C3%A9%20%C3%A9t%C3%A9.pdf`,
    );
    expect(attachmentDisposition('日本.txt')).toBe(
      `attachment; filename="__.txt"; filename*=UTF-8''%E6%97%A5%E6%9C%AC.txt`,
    );
  });

  it('cannot be broken out of by quotes, backslashes, percent signs or line breaks', () => {
    const header = attachmentDisposition('a"b\\c%41\r\nSet-Cookie: x=1\'(*).txt');
    expect(header).toBe(
      `attachment; filename="a_b_c_41__Set-Cookie: x=1'(*).txt"; filename*=UTF-8''a%22b%5Cc%2541%0D%0ASet-Cookie%3A%20x%3D1%27%28%2A%29.txt`,
    );
    expect(header).not.toMatch(/[\r\n]/);
    expect(attachmentDisposition('')).toBe(`attachment; filename="download"; filename*=UTF-8''`);
    expect(attachmentDisposition('bad\ud800.txt')).toContain(`filename*=UTF-8''bad%EF%BF%BD.txt`);
  });
});
