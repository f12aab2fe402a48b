import { hash } from 'node:crypto';

/**
 * A strong entity tag for an answer's bytes: a digest of the body alone (128 bits of SHA-256). It says
 * nothing that the body does not: two answers share a tag only if they are the same bytes, so a tag
 * tells a caller nothing about another account, another key or when anything else was committed.
 */
export function etagOf(body: string): string {
  return `"${hash('sha256', body, 'base64url').slice(0, 22)}"`;
}

/**
 * Whether an If-None-Match header matches `etag` (RFC 9110 §13.1.2: `*`, or a list of tags compared
 * weakly, so `W/"x"` matches `"x"`). An absent or empty header never matches.
 */
export function noneMatch(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  // The common case: a client sending back the one tag it was given.
  if (header === etag) return true;
  for (const part of header.split(',')) {
    const tag = part.trim();
    if (tag === '*') return true;
    if ((tag.startsWith('W/') ? tag.slice(2) : tag) === etag) return true;
  }
  return false;
}
