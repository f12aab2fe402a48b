import type { FastifyInstance } from 'fastify';
import type { Config } from '../config.js';

/**
 * The request id and the security headers on every answer (API, portal, dashboard, checkout pages,
 * files), set once here so a new page cannot forget them. A route that needs its own value (the portal
 * page's CSP with a nonce, a file's sandbox CSP) sets it, and it is kept: this hook only fills in what
 * is missing.
 *
 * CORS stays closed: no answer carries Access-Control-Allow-Origin, so browsers on other origins can
 * neither read API answers nor send credentialed preflighted requests. API keys are for servers.
 */

/** Pages: own origin only, no framing, no plugins, forms post back here. */
export const PAGE_CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data: blob:",
  "connect-src 'self'",
  "font-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/** Anything that is not a page (JSON, bytes): nothing may run or load, nothing may frame it. */
export const DATA_CONTENT_SECURITY_POLICY = "default-src 'none'; frame-ancestors 'none'; sandbox";

export const HSTS_VALUE = 'max-age=31536000; includeSubDomains';

const ALWAYS = {
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'X-Frame-Options': 'DENY',
} as const;

/**
 * Pages only: the opener policy governs top-level documents and means nothing on JSON or bytes, where
 * every header costs (it is parsed on both sides of every answer).
 */
const PAGES_ONLY = { 'Cross-Origin-Opener-Policy': 'same-origin' } as const;

/** HSTS only where browsers honour it and the operator serves https: production, or https URLs. */
export function wantsHsts(config: Pick<Config, 'production' | 'appUrl' | 'baseUrl'>): boolean {
  return config.production || config.appUrl.startsWith('https:') || config.baseUrl.startsWith('https:');
}

export function registerSecurityHeaders(app: FastifyInstance, config: Config): void {
  const always = Object.entries(ALWAYS);
  const pagesOnly = Object.entries(PAGES_ONLY);
  const hsts = wantsHsts(config);
  // A callback hook, not an async one: it runs on every answer, and a promise per answer costs. The
  // request id is set here too (not in an onRequest hook): one hook fewer on every request, and an
  // answer that failed before routing or in a hook still carries it.
  app.addHook('onSend', (request, reply, payload, done) => {
    void reply.header('X-Request-Id', request.id);
    for (const [name, value] of always) {
      if (!reply.hasHeader(name)) void reply.header(name, value);
    }
    const page = String(reply.getHeader('Content-Type') ?? '').startsWith('text/html');
    if (page) {
      for (const [name, value] of pagesOnly) {
        if (!reply.hasHeader(name)) void reply.header(name, value);
      }
    }
    if (!reply.hasHeader('Content-Security-Policy')) {
      void reply.header(
        'Content-Security-Policy',
        page ? PAGE_CONTENT_SECURITY_POLICY : DATA_CONTENT_SECURITY_POLICY,
      );
    }
    if (hsts && !reply.hasHeader('Strict-Transport-Security')) {
      void reply.header('Strict-Transport-Security', HSTS_VALUE);
    }
    done(null, payload);
  });
}

/**
 * Whether cookies carry `Secure`: behind an https APP_URL, and always in production, where TLS is
 * terminated in front of the service even when APP_URL was written with http (a session cookie must
 * never travel in clear text; a browser on http://localhost still accepts it).
 */
export function secureCookies(config: { production: boolean; appUrl: string }): boolean {
  return config.production || config.appUrl.startsWith('https://');
}
