import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ARTIFACTS,
  SCREENSHOTS,
  chromiumAvailable,
  launchChromium,
  seriousAccessibilityProblems,
} from './helpers/browser.js';
import { client, type Client } from './helpers/http.js';
import { png } from './helpers/images.js';
import { signedInOwner, hiddenField, type SignedInBrowser } from './helpers/signed-in.js';
import { startTestServer, type TestServer } from './helpers/server.js';

/**
 * The owner reviews in a browser (Debian's chromium, 1280 px and 360 px): the list marks the intake
 * whose answers wait for review and puts it first; the intake page reads as a person would (labels,
 * Yes/No, local dates and times, swatches, national phone format, a structured answer as a list);
 * one item is approved in place (no reload, the page stays where it was), one is sent back, all the
 * rest approved in one click, and a secret revealed once. Screenshots: the README's pictures
 * (SCREENSHOTS: docs/screenshots/ with UPDATE_SCREENSHOTS=1).
 */
/** What the test reads of the page's window (the tests compile without the DOM's types). */
interface BrowserGlobals {
  scrollY: number;
  stillThisPage?: boolean;
  document: {
    documentElement: { scrollWidth: number };
    createRange(): { selectNodeContents(node: unknown): void; getClientRects(): { length: number } };
  };
}

const available = chromiumAvailable('dashboard review browser tests');

const ITEMS = [
  { key: 'logo', label: 'Your logo', type: 'image' },
  { key: 'about', label: 'About your bakery', type: 'longtext' },
  { key: 'tagline', label: 'Tagline', type: 'text' },
  {
    key: 'style',
    label: 'Look and feel',
    type: 'select',
    options: [
      { value: 'modern', label: 'Modern and clean' },
      { value: 'classic', label: 'Classic and warm' },
    ],
  },
  {
    key: 'features',
    label: 'What the site needs',
    type: 'multiselect',
    options: [
      { value: 'has_shop', label: 'An online shop' },
      { value: 'has_blog', label: 'A blog' },
      { value: 'has_booking', label: 'Table booking' },
    ],
  },
  { key: 'delivery', label: 'Do you deliver?', type: 'boolean' },
  { key: 'launch', label: 'Launch date', type: 'date' },
  { key: 'colours', label: 'Brand colours', type: 'color_list' },
  { key: 'phone', label: 'Phone for the site', type: 'phone' },
  { key: 'budget', label: 'Monthly ad budget (EUR)', type: 'number' },
  { key: 'website', label: 'Current website', type: 'url' },
  {
    key: 'company',
    label: 'Company details',
    type: 'structured',
    schema: {
      type: 'object',
      properties: {
        legal_name: { type: 'string', title: 'Legal name' },
        vat_id: { type: 'string', title: 'VAT number' },
        founded: { type: 'string', format: 'date', title: 'Founded' },
      },
    },
  },
  { key: 'password', label: 'Hosting password', type: 'secret' },
];

const ANSWERS: Record<string, unknown> = {
  about: 'Family bakery since 1952.\nSourdough, rye and the best Franzbrötchen in town.',
  tagline: 'Baked before sunrise',
  style: 'modern',
  features: ['has_shop', 'has_booking'],
  delivery: true,
  launch: '2027-02-01',
  colours: ['#c2410c', '#1e3a8a', '#f5f5f4'],
  phone: '+4915112345678',
  budget: 12500,
  website: 'https://baeckerei-mueller.example',
  company: { legal_name: 'Bäckerei Müller GmbH', vat_id: 'DE123456789', founded: '1952-05-01' },
  password: 'correct horse battery staple',
};

describe.skipIf(!available)('reviewing in the dashboard', () => {
  let server: TestServer;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let app: string;
  let api: Client;
  let owner: SignedInBrowser;
  let intakeId = '';

  beforeAll(async () => {
    await mkdir(SCREENSHOTS, { recursive: true });
    await mkdir(ARTIFACTS, { recursive: true });
    server = await startTestServer('sqlite');
    app = server.server.services.config.appUrl;
    const account = await server.createAccount({ plan: 'agency' });
    api = client(server.url, account.live_key);
    expect((await api.call('PATCH', '/v1/account', { body: { name: 'Pixel & Pine Studio' } })).status).toBe(
      200,
    );
    owner = await signedInOwner(server, account.account_id);
    browser = await launchChromium();
    context = await browser.newContext({
      viewport: { width: 1280, height: 900 },
      locale: 'en-GB',
      timezoneId: 'Europe/Berlin',
    });
    const [name, value] = owner.cookie.split('=') as [string, string];
    await context.addCookies([{ name, value, url: app, httpOnly: true, sameSite: 'Lax' }]);
    page = await context.newPage();
    page.on('dialog', (dialog) => void dialog.accept());
    page.setDefaultTimeout(8000);

    const created = await api.post<{ intake_id: string }>('/v1/intakes', {
      project_name: 'Website refresh – Bäckerei Müller',
      client: { email: 'dana@example.com', name: 'Dana Müller', phone: '+4915112345678' },
      items: ITEMS,
    });
    expect(created.status, created.text).toBe(201);
    intakeId = created.body.intake_id;
    const portal = client(server.url);
    for (const [key, value] of Object.entries(ANSWERS)) {
      const saved = await portal.call('PUT', `/portal/api/${intakeId}/items/${key}`, { body: { value } });
      expect(saved.status, `${key}: ${saved.text}`).toBe(200);
    }
    const upload = await portal.call('POST', `/portal/api/${intakeId}/items/logo/files`, {
      rawBody: await png(800, 400, true),
      headers: { 'content-type': 'image/png', 'x-filename': 'logo-800.png' },
    });
    expect(upload.status, upload.text).toBe(201);
    const sent = await portal.post<{ submitted: string[] }>(`/portal/api/${intakeId}/submit`);
    expect(sent.status, sent.text).toBe(200);
    expect(sent.body.submitted).toHaveLength(ITEMS.length);
    // A newer intake with nothing to review: the one that needs review must still come first.
    const later = await api.post('/v1/intakes', {
      project_name: 'Flyer for the summer fair',
      client: { email: 'kim@example.com', name: 'Kim' },
      items: [{ key: 'text', label: 'Flyer text', type: 'longtext' }],
    });
    expect(later.status).toBe(201);
  });
  afterAll(async () => {
    await browser?.close();
    await server?.stop();
  });

  /** Checked with axe-core; the screen for the README, the whole page for the test's artifacts. */
  async function photograph(name: string): Promise<void> {
    expect(await seriousAccessibilityProblems(page)).toEqual([]);
    await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`) });
    await page.screenshot({ path: join(ARTIFACTS, `${name}-full.png`), fullPage: true });
  }

  const card = (key: string) => page.locator(`section[data-item="${key}"]`);

  it('marks the intake whose answers wait for review and lists it first', async () => {
    await page.goto(`${app}/dashboard/intakes`);
    const first = page.locator('tbody tr').first();
    await expect(first.textContent()).resolves.toContain('Bäckerei Müller');
    await expect(first.textContent()).resolves.toContain(`needs review (${ITEMS.length})`);
    await expect(page.locator('tbody tr').nth(1).textContent()).resolves.not.toContain('needs review');
    await photograph('review-intakes-1280');
  });

  it('shows the answers as a person reads them, times in the viewer’s zone', async () => {
    await page.goto(`${app}/dashboard/intakes/${intakeId}`);
    await expect(card('style').textContent()).resolves.toContain('Modern and clean');
    const features = await card('features').textContent();
    expect(features).toContain('An online shop');
    expect(features).toContain('Table booking');
    expect(features).not.toContain('has_shop');
    await expect(card('delivery').locator('.answer').textContent()).resolves.toBe('Yes');
    await expect(card('launch').textContent()).resolves.toContain('February 1, 2027');
    await expect(card('colours').locator('svg.swatch').count()).resolves.toBe(3);
    await expect(card('phone').getByRole('link').textContent()).resolves.toBe('01511 2345678');
    await expect(card('budget').textContent()).resolves.toContain('12,500');
    await expect(card('company').locator('dt').allTextContents()).resolves.toEqual([
      'Legal name',
      'VAT number',
      'Founded',
    ]);
    await expect(card('logo').locator('img.thumb').isVisible()).resolves.toBe(true);
    await expect(card('logo').textContent()).resolves.toContain('Image');
    // Times: rewritten in Europe/Berlin by the script, no longer labelled UTC.
    const submitted = await card('tagline').locator('time').first().textContent();
    expect(submitted).not.toContain('UTC');
    expect(submitted).toMatch(/^\d{1,2} [A-Z][a-z]{2} \d{4}, \d{2}:\d{2}$/);
    const history = await page.locator('#history').textContent();
    // The client's 13 answers, sent at once, are one line naming every item.
    expect(history).toMatch(
      /Your logo, About your bakery, Tagline, .*Hosting password: sent in · Dana Müller/,
    );
    await expect(page.locator('#review-summary').textContent()).resolves.toContain(
      `Approve all (${ITEMS.length})`,
    );
    await photograph('review-intake-1280');
  });

  it('on a phone: a compact header, whole words in the table, nothing wider than the screen', async () => {
    await page.setViewportSize({ width: 360, height: 740 });
    await page.goto(`${app}/dashboard/intakes`);
    const header = await page.locator('header.top').boundingBox();
    expect(header?.height ?? 999).toBeLessThanOrEqual(56);
    const content = await page.locator('main h1').boundingBox();
    expect(content?.y ?? 999).toBeLessThanOrEqual(130);
    // The project link's words stay whole: each line of it starts a word.
    const link = page.getByRole('link', { name: 'Flyer for the summer fair' });
    const lines = await link.evaluate((a) => {
      const range = (globalThis as unknown as BrowserGlobals).document.createRange();
      range.selectNodeContents(a);
      return range.getClientRects().length;
    });
    const words = 'Flyer for the summer fair'.split(' ').length;
    expect(lines).toBeLessThanOrEqual(words);
    expect(
      await page.evaluate(
        () => (globalThis as unknown as BrowserGlobals).document.documentElement.scrollWidth,
      ),
    ).toBeLessThanOrEqual(360);
    // Each intake a card: nothing scrolls sideways inside the table either, every status badge is
    // within the screen, and the progress shows too, its count in the singular where it is one.
    const { scrollWidth, clientWidth } = await page.locator('.table-wrap').evaluate((el) => {
      const wrap = el as unknown as { scrollWidth: number; clientWidth: number };
      return { scrollWidth: wrap.scrollWidth, clientWidth: wrap.clientWidth };
    });
    expect(scrollWidth).toBeLessThanOrEqual(clientWidth);
    const badges = await page.locator('tbody .badge').all();
    expect(badges.length).toBeGreaterThanOrEqual(3);
    for (const badge of badges) {
      const box = await badge.boundingBox();
      expect((box?.x ?? 999) + (box?.width ?? 999)).toBeLessThanOrEqual(360);
    }
    const second = page.locator('tbody tr').nth(1);
    await expect(second.locator('progress').isVisible()).resolves.toBe(true);
    await expect(second.textContent()).resolves.toMatch(/0 of 1 item(?!s)/);
    await expect(page.locator('main').textContent()).resolves.toContain('2 intakes');
    // Cards to the eye, still a table to a screen reader: its column headers and its cells.
    const tree = await page.locator('main table').ariaSnapshot();
    expect(tree).toContain('columnheader "Status"');
    expect(tree).toContain('columnheader "Progress"');
    expect(tree).toMatch(/cell "Flyer for the summer fair"/);
    await photograph('review-intakes-360');
    await page.goto(`${app}/dashboard/intakes/${intakeId}#item-company`);
    expect(
      await page.evaluate(
        () => (globalThis as unknown as BrowserGlobals).document.documentElement.scrollWidth,
      ),
    ).toBeLessThanOrEqual(360);
    await photograph('review-intake-360');
    await page.setViewportSize({ width: 1280, height: 900 });
  });
  it('approves one item in place: no reload, the page stays where it was', async () => {
    await card('colours').scrollIntoViewIfNeeded();
    await page.evaluate(() => Object.assign(globalThis, { stillThisPage: true }));
    const before = await page.evaluate(() => (globalThis as unknown as BrowserGlobals).scrollY);
    expect(before).toBeGreaterThan(500);
    await card('colours').getByRole('button', { name: 'Approve' }).click();
    await card('colours').getByText('Item approved.').waitFor();
    await expect(card('colours').locator('.badge.approved').count()).resolves.toBe(1);
    expect(await page.evaluate(() => (globalThis as unknown as BrowserGlobals).stillThisPage)).toBe(true);
    const after = await page.evaluate(() => (globalThis as unknown as BrowserGlobals).scrollY);
    expect(Math.abs(after - before)).toBeLessThan(150);
    await expect(page.locator('#review-summary').textContent()).resolves.toContain(
      `Approve all (${ITEMS.length - 1})`,
    );
    const history = await page.locator('#history').textContent();
    expect(history).toContain('Brand colours: approved');
    expect(history).toMatch(/Brand colours: approved · owner-[a-z0-9]+@example\.com/);
  });

  it('asks for changes in place', async () => {
    const tagline = card('tagline');
    await tagline.getByText('Request a revision').click();
    await tagline.getByLabel('What should the client change?').fill('Shorter, please: four words at most.');
    await tagline.getByRole('button', { name: 'Send revision request' }).click();
    await card('tagline').locator('.badge.needs_revision').waitFor();
    await expect(card('tagline').textContent()).resolves.toContain('Shorter, please');
    expect(await page.evaluate(() => (globalThis as unknown as BrowserGlobals).stillThisPage)).toBe(true);
  });

  it('says in the card why an action was refused, without leaving the page', async () => {
    // Someone else sends "Current website" back while this page still offers to approve it.
    const sentBack = await api.post(`/v1/intakes/${intakeId}/revision`, {
      item_key: 'website',
      note: 'The link is broken.',
    });
    expect(sentBack.status, sentBack.text).toBe(200);
    await card('website').getByRole('button', { name: 'Approve' }).click();
    await expect(card('website').getByRole('alert').textContent()).resolves.toContain(
      'Cannot approve website',
    );
    expect(await page.evaluate(() => (globalThis as unknown as BrowserGlobals).stillThisPage)).toBe(true);
  });

  it('without script, approving comes back to the same item', async () => {
    const plain = await browser.newContext({
      viewport: { width: 1280, height: 900 },
      javaScriptEnabled: false,
    });
    const [name, value] = owner.cookie.split('=') as [string, string];
    await plain.addCookies([{ name, value, url: app, httpOnly: true, sameSite: 'Lax' }]);
    const noScript = await plain.newPage();
    await noScript.goto(`${app}/dashboard/intakes/${intakeId}`);
    await noScript.locator('section[data-item="budget"]').getByRole('button', { name: 'Approve' }).click();
    await noScript.waitForURL(/item=budget#item-budget$/);
    const budget = noScript.locator('section[data-item="budget"]');
    await expect(budget.getByText('Item approved.').isVisible()).resolves.toBe(true);
    expect(await noScript.evaluate(() => (globalThis as unknown as BrowserGlobals).scrollY)).toBeGreaterThan(
      500,
    );
    // Without script the times read in UTC, and say so.
    await expect(budget.locator('time').first().textContent()).resolves.toContain('UTC');
    await plain.close();
  });

  it('approves everything else in one click', async () => {
    await page.goto(`${app}/dashboard/intakes/${intakeId}`);
    await page.getByRole('button', { name: /^Approve all/ }).click();
    await page.getByText('Every submitted answer is approved.').waitFor();
    const status = await api.get<{
      progress: { awaiting_review: number };
      items: { key: string; status: string }[];
    }>(`/v1/intakes/${intakeId}/status`);
    expect(status.body.progress.awaiting_review).toBe(0);
    expect(status.body.items.filter((i) => i.status !== 'approved').map((i) => i.key)).toEqual([
      'tagline',
      'website',
    ]);
    expect(await page.locator('#review-summary button').count()).toBe(0);
    const audit = await api.get<{ entries: { action: string; actor: { type: string } }[] }>(
      '/v1/audit?limit=50',
    );
    expect(audit.body.entries.filter((e) => e.actor.type === 'user').map((e) => e.action)).toEqual(
      expect.arrayContaining(['intake.approve', 'intake.item_approve', 'intake.revision_request']),
    );
  });

  it('reveals a secret once, in place, and records it; a second time is refused', async () => {
    await card('password').getByRole('button', { name: 'Reveal once' }).click();
    await expect(card('password').locator('#secret-password').textContent()).resolves.toBe(ANSWERS.password);
    await photograph('review-secret-1280');
    await page.reload();
    await expect(card('password').getByRole('button', { name: 'Reveal once' }).count()).resolves.toBe(0);
    await expect(card('password').textContent()).resolves.toContain('a secret is shown only once');
    await expect(card('password').textContent()).resolves.not.toContain(ANSWERS.password);
    const form = await (await owner.get(`${app}/dashboard/intakes/${intakeId}`)).text();
    const again = await owner.postForm(`${app}/dashboard/intakes/${intakeId}/items/password/reveal`, {
      _csrf: hiddenField(form, '_csrf'),
    });
    expect(again.status).toBe(410);
    expect(await again.text()).not.toContain(ANSWERS.password);
    const audit = await api.get<{ entries: { action: string; actor: { type: string } }[] }>(
      '/v1/audit?limit=50',
    );
    const reveals = audit.body.entries.filter((e) => e.action === 'intake.secret_reveal');
    expect(reveals.map((e) => e.actor.type)).toEqual(['user']);
  });
});
