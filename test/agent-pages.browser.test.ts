import { createHash, randomBytes } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { type Browser, type Page } from 'playwright-core';
import {
  ARTIFACTS,
  chromiumAvailable,
  launchChromium,
  seriousAccessibilityProblems,
} from './helpers/browser.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client } from './helpers/http.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { signedInOwner } from './helpers/signed-in.js';

/**
 * The pages of billing and agent sign-in in Debian's chromium: the device approval page, the OAuth
 * consent page and the local checkout and portal pages, each checked with axe-core and photographed
 * into test/artifacts/ (agent-*.png, billing-*.png).
 */
const available = chromiumAvailable('agent page browser tests');

// Not port 9 (the API tests' redirect target): browsers refuse to load it.
const REDIRECT_URI = 'http://127.0.0.1:8765/callback';

describe.skipIf(!available)('billing and agent sign-in pages in a browser', () => {
  let server: TestServer;
  let browser: Browser;
  let page: Page;
  let app: string;
  let live: ReturnType<typeof client>;

  beforeAll(async () => {
    await mkdir(ARTIFACTS, { recursive: true });
    server = await startTestServer('sqlite');
    app = server.server.services.config.appUrl;
    const account = await server.createAccount({ plan: 'free' });
    live = client(server.url, account.live_key);
    const signedIn = await signedInOwner(server, account.account_id);
    browser = await launchChromium();
    const context = await browser.newContext({ viewport: { width: 1024, height: 800 } });
    const [name, value] = signedIn.cookie.split('=') as [string, string];
    await context.addCookies([{ name, value, url: app, httpOnly: true, sameSite: 'Lax' }]);
    page = await context.newPage();
    page.setDefaultTimeout(8000);
  });
  afterAll(async () => {
    await browser?.close();
    await server?.stop();
  });

  async function checkPage(name: string): Promise<void> {
    expect(await seriousAccessibilityProblems(page)).toEqual([]);
    await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
    // A phone and a wide desktop, to look at.
    for (const width of [360, 1280]) {
      await page.setViewportSize({ width, height: 800 });
      await page.screenshot({ path: join(ARTIFACTS, `${name}-${width}.png`), fullPage: true });
    }
    await page.setViewportSize({ width: 1024, height: 800 });
  }

  it('approves a device code on the device page', async () => {
    const started = await client(server.url).call<Record<string, string>>(
      'POST',
      '/oauth/device_authorization',
      {
        rawBody: 'client_id=intake-cli&scope=intakes%3Aread',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      },
    );
    await page.goto(`${app}/dashboard/device`);
    await checkPage('agent-device-enter-code');
    await page.getByLabel('Code shown in your terminal').fill(started.body.user_code ?? '');
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.locator('.code').waitFor();
    expect(await page.locator('.code').textContent()).toBe(started.body.user_code);
    await checkPage('agent-device-approve');
    await page.getByRole('button', { name: 'Approve' }).click();
    await page.getByRole('heading', { name: 'Device connected' }).waitFor();
    await checkPage('agent-device-connected');
  });

  it('grants an OAuth client access on the consent page', async () => {
    const registered = await client(server.url).post<Record<string, string>>('/oauth/register', {
      client_name: 'Browser agent',
      redirect_uris: [REDIRECT_URI],
      token_endpoint_auth_method: 'none',
    });
    const verifier = randomBytes(32).toString('base64url');
    const query = new URLSearchParams({
      response_type: 'code',
      client_id: registered.body.client_id ?? '',
      redirect_uri: REDIRECT_URI,
      state: 'xyz',
      code_challenge: createHash('sha256').update(verifier).digest('base64url'),
      code_challenge_method: 'S256',
      scope: 'intakes:read intakes:write',
    });
    // The client's redirect target: answered here, as the agent's local listener would.
    let redirected: URL | undefined;
    await page.route(`${REDIRECT_URI}**`, async (route) => {
      redirected = new URL(route.request().url());
      await route.fulfill({
        contentType: 'text/html',
        body: '<!doctype html><title>Done</title><p>Done</p>',
      });
    });
    await page.goto(`${app}/oauth/authorize?${query.toString()}`);
    expect(await page.locator('h1').textContent()).toBe('Allow Browser agent to use your account?');
    await checkPage('agent-oauth-consent');
    await page.getByLabel(/secrets:read/).check();
    await page.getByRole('button', { name: 'Allow' }).click();
    await page.waitForURL((url) => url.href.startsWith(REDIRECT_URI));
    expect(redirected?.searchParams.get('state')).toBe('xyz');
    const exchanged = await client(server.url).call<Record<string, string>>('POST', '/oauth/token', {
      rawBody: new URLSearchParams({
        grant_type: 'authorization_code',
        code: redirected?.searchParams.get('code') ?? '',
        redirect_uri: REDIRECT_URI,
        code_verifier: verifier,
        client_id: registered.body.client_id ?? '',
      }).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(exchanged.body.scope).toBe('intakes:read intakes:write secrets:read');
  });

  it('changes the plan through the local checkout and portal pages', async () => {
    const checkout = await live.post<Record<string, string>>('/v1/billing/checkout', { plan: 'solo' });
    await page.goto(checkout.body.url ?? '');
    await checkPage('billing-local-checkout');
    await page.getByRole('button', { name: 'Confirm plan change' }).click();
    await page.waitForURL((url) => url.pathname.startsWith('/dashboard'));
    expect((await live.get<Record<string, unknown>>('/v1/usage')).body.rate_limit_per_hour).toBe(600);

    const portal = await live.post<Record<string, string>>('/v1/billing/portal', {});
    await page.goto(portal.body.url ?? '');
    await checkPage('billing-local-portal');
    await page.getByRole('radio', { name: /Agency/ }).check();
    await page.getByRole('button', { name: 'Save' }).click();
    await page.waitForURL((url) => url.pathname.startsWith('/dashboard'));
    expect((await live.get<Record<string, unknown>>('/v1/account')).body.plan).toBe('agency');
  });
});
