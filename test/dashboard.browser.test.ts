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
import { client, type Client } from './helpers/http.js';
import { png } from './helpers/images.js';
import { startSmtpServer } from './helpers/mail.js';
import { ownerEmail, signInLinkOf } from './helpers/dashboard.js';
import { answer, startReceiver, type Receiver } from './helpers/receivers.js';
import { startTestServer, type TestServer } from './helpers/server.js';

/**
 * An account holder uses the dashboard in Debian's chromium: signs in through the emailed link,
 * creates an intake, reviews what the client sent through the portal (approves one item, sends
 * another back), creates and revokes an API key, adds a webhook and sends it a test event, reads the
 * test inbox. Every page is checked with axe-core and photographed into test/artifacts/.
 */
const available = chromiumAvailable('dashboard browser tests');

describe.skipIf(!available)('the dashboard in a browser', () => {
  let server: TestServer;
  let smtp: Awaited<ReturnType<typeof startSmtpServer>>;
  let receiver: Receiver;
  let browser: Browser;
  let page: Page;
  let app: string;
  let email: string;
  let api: Client;
  let testApi: Client;
  let intakeId = '';

  beforeAll(async () => {
    await mkdir(ARTIFACTS, { recursive: true });
    smtp = await startSmtpServer();
    receiver = await startReceiver(answer(200, 'thanks'));
    server = await startTestServer('sqlite', { SMTP_URL: smtp.url });
    app = server.server.services.config.appUrl;
    const account = await server.createAccount({ plan: 'agency' });
    email = await ownerEmail(server, account.account_id);
    api = client(server.url, account.live_key);
    testApi = client(server.url, account.test_key);
    browser = await launchChromium();
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    page = await context.newPage();
    page.on('dialog', (dialog) => void dialog.accept());
    page.setDefaultTimeout(8000);
  });
  afterAll(async () => {
    await browser?.close();
    await server?.stop();
    await smtp?.close();
    await receiver?.close();
  });

  async function shot(name: string): Promise<void> {
    await page.screenshot({ path: join(ARTIFACTS, `dashboard-${name}.png`), fullPage: true });
  }

  async function expectAccessible(): Promise<void> {
    expect(await seriousAccessibilityProblems(page)).toEqual([]);
  }

  it('signs in through the emailed one-time link', async () => {
    await page.goto(`${app}/dashboard/keys`);
    expect(new URL(page.url()).pathname).toBe('/dashboard/sign-in');
    await expectAccessible();
    await shot('sign-in');
    await page.getByLabel('Email address').fill(email);
    await page.getByRole('button', { name: 'Email me a sign-in link' }).click();
    await page.getByText('Check your email').first().waitFor();
    const [mail] = await smtp.waitFor(email);
    expect(mail?.parsed.subject).toContain('sign-in link');
    await page.goto(signInLinkOf(mail?.parsed.text ?? ''));
    await page.getByRole('button', { name: 'Sign in to the dashboard' }).click();
    await page.waitForURL(`${app}/dashboard/keys`);
    await expect(page.getByRole('heading', { name: 'API keys' }).isVisible()).resolves.toBe(true);
  });

  it('creates an intake from the dashboard', async () => {
    await page.goto(`${app}/dashboard/intakes/new`);
    await expectAccessible();
    await page.getByLabel('Project').fill('Brand refresh');
    await page.getByLabel('Client email').fill('dana@example.com');
    await page.getByLabel('Client name').fill('Dana');
    await page.locator('#item-0-label').fill('About your company');
    await page.locator('#item-0-type').selectOption('longtext');
    await page.locator('button[data-add-type="text"]').click();
    await page.locator('#item-1-label').fill('Tagline');
    // The key is made from the label; typing one means opening "Advanced".
    await page.locator('fieldset.item-row').nth(1).locator('summary').click();
    await page.locator('#item-1-key').fill('tagline');
    await page.locator('button[data-add-type="image"]').click();
    await page.locator('#item-2-label').fill('Logo');
    await page.locator('#item-card-2 input[name="items[2][formats]"][value="png"]').check();
    await page.locator('#item-card-2 input[name="items[2][formats]"][value="svg"]').check();
    await page.locator('#item-2-min_width').fill('200');
    await shot('intake-new');
    await page.getByRole('button', { name: 'Create and send to the client' }).click();
    await page.waitForURL(/\/dashboard\/intakes\/in_/);
    intakeId = new URL(page.url()).pathname.split('/').pop() ?? '';
    const created = await api.get<{
      project_name: string;
      items: { key: string; type: string; constraints: object }[];
    }>(`/v1/intakes/${intakeId}`);
    expect(created.body.project_name).toBe('Brand refresh');
    expect(created.body.items.map((i) => [i.key, i.type])).toEqual([
      ['about_your_company', 'longtext'],
      ['tagline', 'text'],
      ['logo', 'image'],
    ]);
    expect(created.body.items[2]?.constraints).toEqual({ formats: ['png', 'svg'], min_width: 200 });
  });

  it('reviews what the client sent through the portal: approves one item, sends another back', async () => {
    const portal = client(server.url);
    for (const [key, value] of [
      ['about_your_company', 'We bake bread.'],
      ['tagline', 'Bread, daily'],
    ] as const) {
      expect(
        (await portal.call('PUT', `/portal/api/${intakeId}/items/${key}`, { body: { value } })).status,
      ).toBe(200);
      expect((await portal.post(`/portal/api/${intakeId}/items/${key}/submit`)).status).toBe(200);
    }
    const upload = await portal.call('POST', `/portal/api/${intakeId}/items/logo/files`, {
      rawBody: await png(400, 200),
      headers: { 'content-type': 'image/png', 'x-filename': 'logo.png' },
    });
    expect(upload.status).toBe(201);
    expect((await portal.post(`/portal/api/${intakeId}/items/logo/submit`)).status).toBe(200);

    await page.goto(`${app}/dashboard/intakes/${intakeId}`);
    await expect(page.locator('section[data-item="logo"] img.thumb').isVisible()).resolves.toBe(true);
    await page
      .locator('section[data-item="about_your_company"]')
      .getByRole('button', { name: 'Approve' })
      .click();
    await page.getByText('Item approved.').waitFor();
    const tagline = page.locator('section[data-item="tagline"]');
    await tagline.getByText('Request a revision').click();
    await tagline.getByLabel('What should the client change?').fill('Shorter, please.');
    await tagline.getByRole('button', { name: 'Send revision request' }).click();
    await page.getByText('Revision requested').first().waitFor();
    await expectAccessible();
    await shot('intake-detail');

    const status = await api.get<{ items: { key: string; status: string }[] }>(
      `/v1/intakes/${intakeId}/status`,
    );
    const byKey = Object.fromEntries(status.body.items.map((i) => [i.key, i.status]));
    expect(byKey).toMatchObject({
      about_your_company: 'approved',
      tagline: 'needs_revision',
      logo: 'submitted',
    });
    const audit = await api.get<{ entries: { action: string; actor: { type: string } }[] }>(
      '/v1/audit?limit=20',
    );
    const byUser = audit.body.entries.filter((e) => e.actor.type === 'user').map((e) => e.action);
    expect(byUser).toEqual(
      expect.arrayContaining(['intake.create', 'intake.item_approve', 'intake.revision_request']),
    );

    await page.goto(`${app}/dashboard/intakes?q=brand`);
    await expect(page.getByRole('link', { name: 'Brand refresh' }).isVisible()).resolves.toBe(true);
    await expectAccessible();
    await shot('intakes');
  });

  it('creates an API key (shown once) and revokes it', async () => {
    await page.goto(`${app}/dashboard/keys`);
    await page.getByLabel('Name').fill('CI pipeline');
    await page.getByRole('button', { name: 'Create key' }).click();
    const secret = (await page.locator('#new-key').textContent())?.trim() ?? '';
    expect(secret).toMatch(/^svc_live_/);
    await expect(page.getByRole('button', { name: 'Copy' }).isVisible()).resolves.toBe(true);
    await expectAccessible();
    await shot('keys');
    expect((await client(server.url, secret).get('/v1/intakes')).status).toBe(200);
    await page.goto(`${app}/dashboard/keys`);
    expect(await page.locator('#new-key').count()).toBe(0);
    await page.locator('tr', { hasText: 'CI pipeline' }).getByRole('button', { name: 'Revoke' }).click();
    await page.getByText('Key revoked').waitFor();
    expect((await client(server.url, secret).get('/v1/intakes')).status).toBe(401);
  });

  it('adds a webhook endpoint and sends it a test event', async () => {
    await page.goto(`${app}/dashboard/webhooks`);
    await page.getByLabel('URL').fill(receiver.url);
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    expect((await page.locator('#new-secret').textContent())?.trim()).toMatch(/^whsec_/);
    await shot('webhooks');
    await page.getByRole('link', { name: receiver.url }).click();
    await page.getByLabel('Event').selectOption('item.submitted');
    await page.getByRole('button', { name: 'Send test event' }).click();
    await page.getByText('Test event item.submitted: HTTP 200').waitFor();
    const [received] = await receiver.waitFor(1);
    expect(JSON.parse(received?.body ?? '{}')).toMatchObject({ event: 'item.submitted' });
    await expect(page.locator('table').getByText('thanks').isVisible()).resolves.toBe(true);
    await expectAccessible();
    await shot('webhook-detail');
  });

  it('switches to test data and reads the test inbox', async () => {
    const created = await testApi.post<{ intake_id: string }>('/v1/intakes', {
      project_name: 'Test run',
      client: { email: 'test-client@example.com' },
      items: [{ key: 'about', label: 'About', type: 'text' }],
    });
    expect(created.status).toBe(201);
    await page.goto(`${app}/dashboard/inbox`);
    await page.getByRole('button', { name: 'Switch to test data' }).click();
    await page.getByText('You are viewing test data').waitFor();
    await page.getByText('test-client@example.com').first().waitFor();
    await expect(page.locator('iframe.mail-frame').count()).resolves.toBeGreaterThan(0);
    await expectAccessible();
    await shot('inbox');
    await page.goto(`${app}/dashboard/intakes`);
    await expect(page.getByRole('link', { name: 'Test run' }).isVisible()).resolves.toBe(true);
    await expect(page.getByRole('link', { name: 'Brand refresh' }).count()).resolves.toBe(0);
    await page.getByRole('button', { name: 'Switch to live data' }).click();
    await page.getByRole('link', { name: 'Brand refresh' }).waitFor();
  });

  it('shows templates, usage, the audit log and settings', async () => {
    for (const section of ['templates', 'usage', 'audit', 'settings']) {
      await page.goto(`${app}/dashboard/${section}`);
      expect(await page.locator('h1').count()).toBe(1);
      await expectAccessible();
      await shot(section);
    }
    await page.setViewportSize({ width: 360, height: 740 });
    await page.goto(`${app}/dashboard/intakes/${intakeId}`);
    await shot('intake-detail-narrow');
    const width = await page.evaluate(
      () =>
        (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } }).document
          .documentElement.scrollWidth,
    );
    expect(width).toBeLessThanOrEqual(360);
  });

  it('upgrades from Free to Solo through the local provider, and the new limit applies at once', async () => {
    await page.setViewportSize({ width: 1280, height: 900 });
    // Down to Free first, through the local subscription page (the account started on Agency).
    const portal = await api.post<Record<string, string>>('/v1/billing/portal', {});
    expect(portal.status, portal.text).toBe(200);
    await page.goto(portal.body.url ?? '');
    await page.getByRole('radio', { name: /Free/ }).check();
    await page.getByRole('button', { name: 'Save' }).click();
    await page.waitForURL((url) => url.pathname.startsWith('/dashboard'));
    const pricing = (await (await fetch(`${server.url}/pricing.json`)).json()) as {
      plans: { id: string; rate_limit_per_hour: number }[];
    };
    const limitOf = (plan: string): number =>
      pricing.plans.find((p) => p.id === plan)?.rate_limit_per_hour ?? -1;
    const onFree = await api.get<Record<string, unknown>>('/v1/usage');
    expect(onFree.body.rate_limit_per_hour).toBe(limitOf('free'));

    // Then up to Solo from the dashboard's usage page.
    await page.goto(`${app}/dashboard/usage`);
    await shot('usage-free');
    await page.getByRole('button', { name: 'Upgrade to Solo' }).click();
    await page.waitForURL((url) => url.pathname.startsWith('/billing/local/'));
    await expectAccessible();
    await shot('billing-checkout');
    await page.getByRole('button', { name: 'Confirm plan change' }).click();
    await page.waitForURL((url) => url.pathname === '/dashboard/usage');
    await shot('usage-solo');

    const onSolo = await api.get<Record<string, unknown>>('/v1/usage');
    expect(limitOf('solo')).toBeGreaterThan(limitOf('free'));
    expect(onSolo.body.rate_limit_per_hour).toBe(limitOf('solo'));
    expect(Number(onSolo.headers.get('x-ratelimit-limit'))).toBe(limitOf('solo'));
    expect((await api.get<Record<string, unknown>>('/v1/account')).body.plan).toBe('solo');
  });
});
