import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATABASES } from './helpers/env.js';
import { createWorld, type HardeningWorld } from './helpers/hardening-world.js';
import { startTestServer, type TestServer } from './helpers/server.js';

/**
 * Security headers on every kind of answer (portal, dashboard and checkout pages, JSON, errors,
 * files), HSTS in production, and CORS closed on the API.
 */

const EVIL_ORIGIN = 'https://evil.example';

function expectPageHeaders(headers: Headers, where: string): void {
  const csp = headers.get('content-security-policy') ?? '';
  expect(csp, where).toContain("frame-ancestors 'none'");
  expect(csp, where).toMatch(/default-src '(self|none)'/);
  expect(csp, where).not.toContain('unsafe-eval');
  expect(headers.get('x-frame-options'), where).toBe('DENY');
  expect(headers.get('x-content-type-options'), where).toBe('nosniff');
  expect(headers.get('referrer-policy'), where).toMatch(/^(no-referrer|same-origin|strict-origin)/);
  // Documents only: the opener policy means nothing on JSON, so data answers leave it out.
  expect(headers.get('cross-origin-opener-policy'), where).toBe('same-origin');
}

function expectNoCors(headers: Headers, where: string): void {
  expect(headers.get('access-control-allow-origin'), where).toBeNull();
  expect(headers.get('access-control-allow-credentials'), where).toBeNull();
}

describe.each(DATABASES)('security headers on %s', (database) => {
  let server: TestServer;
  let world: HardeningWorld;

  beforeAll(async () => {
    server = await startTestServer(database);
    world = await createWorld(server);
  });
  afterAll(async () => server?.stop());

  it('sends CSP with frame-ancestors, X-Frame-Options, Referrer-Policy, COOP and nosniff on every page', async () => {
    const pages = [`/portal/${world.intakeId}`, '/dashboard', '/dashboard/sign-in'];
    // The checkout page of the local billing provider, when this build has billing.
    const checkout = await world.api.post<{ url?: string }>('/v1/billing/checkout', { plan: 'solo' });
    if (checkout.status < 300 && checkout.body.url) pages.push(new URL(checkout.body.url).pathname);
    let checked = 0;
    for (const path of pages) {
      // Redirects followed (signed-out /dashboard goes to its sign-in page): the page is what is checked.
      const response = await fetch(`${server.url}${path}`);
      await response.arrayBuffer();
      expect(response.status, path).toBeLessThan(500);
      expect(response.headers.get('content-type'), path).toContain('text/html');
      expectPageHeaders(response.headers, path);
      checked++;
    }
    expect(checked).toBeGreaterThanOrEqual(3);
  });

  it('sends nosniff, a locked-down CSP and no framing on JSON, errors and files too', async () => {
    const answers = [
      await fetch(`${server.url}/v1/account`, { headers: { authorization: `Bearer ${world.liveKey}` } }),
      await fetch(`${server.url}/v1/intakes/in_missing`, {
        headers: { authorization: `Bearer ${world.liveKey}` },
      }),
      await fetch(`${server.url}/v1/account`),
      await fetch(`${server.url}/no/such/route`),
      await fetch(`${server.url}/portal/api/${world.intakeId}`),
      await fetch(`${server.url}/files/${world.fileId}?expires=1&sig=00`),
      await fetch(`${server.url}/v1/openapi.json`),
      await fetch(`${server.url}/healthz`),
    ];
    for (const response of answers) {
      await response.arrayBuffer();
      const where = `${response.url} ${response.status}`;
      expect(response.headers.get('x-content-type-options'), where).toBe('nosniff');
      expect(response.headers.get('x-frame-options'), where).toBe('DENY');
      expect(response.headers.get('content-security-policy'), where).toContain("frame-ancestors 'none'");
      expect(response.headers.get('strict-transport-security'), where).toBeNull();
    }
  });

  it('sends a 304 its validator, request id and rate limit, and the security headers of every answer', async () => {
    const auth = { authorization: `Bearer ${world.liveKey}` };
    const first = await fetch(`${server.url}/v1/account`, { headers: auth });
    await first.arrayBuffer();
    const etag = first.headers.get('etag');
    expect(etag).toMatch(/^"/);
    const polled = await fetch(`${server.url}/v1/account`, {
      headers: { ...auth, 'if-none-match': etag ?? '' },
    });
    expect(polled.status).toBe(304);
    expect(polled.headers.get('etag')).toBe(etag);
    expect(polled.headers.get('x-request-id')).toMatch(/^req_/);
    expect(polled.headers.get('x-ratelimit-remaining')).toMatch(/^\d+$/);
    expect(polled.headers.get('x-content-type-options')).toBe('nosniff');
    expect(polled.headers.get('x-frame-options')).toBe('DENY');
    expect(polled.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
  });

  it('keeps CORS closed: no allow-origin for other origins, on simple requests or preflights', async () => {
    const paths = [
      '/v1/intakes',
      '/v1/account',
      '/v1/openapi.json',
      `/portal/api/${world.intakeId}`,
      '/pricing.json',
    ];
    for (const path of paths) {
      const simple = await fetch(`${server.url}${path}`, {
        headers: { origin: EVIL_ORIGIN, authorization: `Bearer ${world.liveKey}` },
      });
      await simple.arrayBuffer();
      expectNoCors(simple.headers, `GET ${path}`);
      const preflight = await fetch(`${server.url}${path}`, {
        method: 'OPTIONS',
        headers: {
          origin: EVIL_ORIGIN,
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'authorization, content-type',
        },
      });
      await preflight.arrayBuffer();
      expect(preflight.status, `OPTIONS ${path}`).toBeLessThan(500);
      expectNoCors(preflight.headers, `OPTIONS ${path}`);
    }
  });
});

describe('HSTS in production', () => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer('sqlite', {
      NODE_ENV: 'production',
      SECRET_KEY: 'headers-test-secret-key-0123456789abcdef',
    });
  });
  afterAll(async () => server?.stop());

  it('sends Strict-Transport-Security on every answer, a 304 included', async () => {
    const responses: Response[] = [];
    for (const path of ['/healthz', '/v1/account', '/no/such/route', '/dashboard'])
      responses.push(await fetch(`${server.url}${path}`, { redirect: 'manual' }));
    const account = await server.createAccount({ plan: 'solo' });
    const auth = { authorization: `Bearer ${account.live_key}` };
    const tagged = await fetch(`${server.url}/v1/account`, { headers: auth });
    const polled = await fetch(`${server.url}/v1/account`, {
      headers: { ...auth, 'if-none-match': tagged.headers.get('etag') ?? '' },
    });
    expect(polled.status).toBe(304);
    responses.push(tagged, polled);
    for (const response of responses) {
      await response.arrayBuffer();
      expect(response.headers.get('strict-transport-security'), `${response.url} ${response.status}`).toMatch(
        /^max-age=\d{8,}; includeSubDomains$/,
      );
    }
  });
});
