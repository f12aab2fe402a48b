import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ARTIFACTS,
  chromiumAvailable,
  launchChromium,
  seriousAccessibilityProblems,
} from './helpers/browser.js';
import { client, type Client } from './helpers/http.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { signedInOwner } from './helpers/signed-in.js';

/**
 * The owner's side of notifications in Debian's chromium: the settings page's Notifications block
 * (chosen with the mouse, checked with axe-core) and the emails it leads to, photographed at 360 px
 * and 1280 px into test/artifacts/ (owner-notice-*.png).
 */
const available = chromiumAvailable('owner notification browser tests');

interface OutboxMessage {
  to: string;
  subject: string | null;
  html: string | null;
}

describe.skipIf(!available)('owner notifications in a browser', () => {
  let server: TestServer;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let app: string;
  let test: Client;
  let ownerEmail: string;
  let liveKey: string;

  beforeAll(async () => {
    await mkdir(ARTIFACTS, { recursive: true });
    server = await startTestServer('sqlite');
    app = server.server.services.config.appUrl;
    const account = await server.createAccount({ plan: 'agency' });
    test = client(server.url, account.test_key);
    liveKey = account.live_key;
    const live = client(server.url, liveKey);
    await live.patch('/v1/account', { name: 'Studio Nord Creative Partners' });
    ownerEmail = (await live.get<{ email: string }>('/v1/account')).body.email;
    const signedIn = await signedInOwner(server, account.account_id);
    browser = await launchChromium();
    context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const [name, value] = signedIn.cookie.split('=') as [string, string];
    await context.addCookies([{ name, value, url: app, httpOnly: true, sameSite: 'Lax' }]);
    page = await context.newPage();
    page.setDefaultTimeout(8000);
  });
  afterAll(async () => {
    await browser?.close();
    await server?.stop();
  });

  const pageWidth = () =>
    page.evaluate(
      () =>
        (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } }).document
          .documentElement.scrollWidth,
    );

  async function intakeAnswered(project: string, answers: Record<string, string>): Promise<string> {
    const created = await test.post<{ intake_id: string }>('/v1/intakes', {
      project_name: project,
      client: { email: 'dana.longname-for-wrapping@harbour-and-sons-shipping.example.com', name: 'Dana' },
      items: [
        { key: 'about', label: 'About your company', type: 'longtext' },
        { key: 'site', label: 'Current website address', type: 'url' },
        { key: 'tagline', label: 'Your tagline', type: 'text' },
      ],
    });
    expect(created.status, created.text).toBe(201);
    const id = created.body.intake_id;
    const portal = client(server.url);
    for (const [key, value] of Object.entries(answers)) {
      const saved = await portal.call('PUT', `/portal/api/${id}/items/${key}`, { body: { value } });
      expect(saved.status, saved.text).toBe(200);
    }
    expect((await portal.post(`/portal/api/${id}/submit`)).status).toBe(200);
    return id;
  }

  async function ownerOutbox(): Promise<OutboxMessage[]> {
    const answer = await test.get<{ messages: OutboxMessage[] }>('/v1/test_helpers/outbox');
    return answer.body.messages.filter((m) => m.to === ownerEmail);
  }

  /** An email as a mail app on a phone and on a desktop shows it: no sideways scrolling on the phone. */
  async function photographEmail(html: string, name: string): Promise<void> {
    for (const width of [360, 1280]) {
      await page.setViewportSize({ width, height: 800 });
      // A blank page, as a mail app's view: not the dashboard's, whose CSP refuses inline styles.
      await page.goto('about:blank');
      await page.setContent(html);
      expect(await pageWidth(), `${name} at ${width} px`).toBeLessThanOrEqual(width);
      await page.screenshot({ path: join(ARTIFACTS, `owner-notice-${name}-${width}.png`), fullPage: true });
    }
  }

  it('shows the Notifications block on the settings page, accessible at 1280 px and 360 px', async () => {
    for (const width of [1280, 360]) {
      await page.setViewportSize({ width, height: 900 });
      await page.goto(`${app}/dashboard/settings#notifications`);
      const block = page.locator('#notifications');
      await block.waitFor();
      expect(await block.getByRole('radio', { name: 'Each time' }).isChecked()).toBe(true);
      expect(await seriousAccessibilityProblems(page)).toEqual([]);
      expect(await pageWidth()).toBeLessThanOrEqual(width);
      await block.screenshot({ path: join(ARTIFACTS, `owner-notice-settings-${width}.png`) });
    }
  });

  it('sends one email per sending, readable on a phone', async () => {
    const id = await intakeAnswered('Harbour relaunch', {
      about: 'We build boats.',
      site: 'https://boats.example.com',
      tagline: 'Afloat since 1990',
    });
    const answer = await test.post('/v1/test_helpers/advance_clock', { seconds: 61 });
    expect(answer.status).toBe(200);
    const [email] = await ownerOutbox();
    expect(email?.subject).toBe('[Test] Harbour relaunch is ready for your review');
    await photographEmail(email?.html ?? '', 'ready');
    // The button leads to the intake in the dashboard.
    expect(await page.getByRole('link', { name: 'Open in the dashboard' }).getAttribute('href')).toBe(
      `${app}/dashboard/intakes/${id}`,
    );
  });

  it("writes in the account's language", async () => {
    const live = client(server.url, liveKey);
    expect((await live.patch('/v1/account', { default_language: 'de' })).status).toBe(200);
    try {
      await intakeAnswered('Herbstkatalog', { about: 'Wir bauen Boote.' });
      expect((await test.post('/v1/test_helpers/advance_clock', { seconds: 61 })).status).toBe(200);
      const german = (await ownerOutbox()).find((m) => m.subject?.includes('Herbstkatalog'));
      expect(german?.subject).toBe('[Test] Neue Antworten von Dana: Herbstkatalog');
      await photographEmail(german?.html ?? '', 'answers-de');
      expect(await page.getByRole('link', { name: 'Im Dashboard öffnen' }).count()).toBe(1);
    } finally {
      await live.patch('/v1/account', { default_language: 'en' });
    }
  });

  it('switches to the daily summary with the mouse, and the digest gathers the day', async () => {
    await page.setViewportSize({ width: 360, height: 900 });
    await page.goto(`${app}/dashboard/settings`);
    const block = page.locator('#notifications');
    await block.getByRole('radio', { name: 'Daily summary' }).check();
    await block.getByLabel('Time zone of the daily summary').selectOption('Europe/Berlin');
    await block.getByRole('button', { name: 'Save notifications' }).click();
    await page.waitForURL(/notice=saved#notifications$/);
    expect(
      await page.locator('#notifications').getByRole('radio', { name: 'Daily summary' }).isChecked(),
    ).toBe(true);
    await page
      .locator('#notifications')
      .screenshot({ path: join(ARTIFACTS, 'owner-notice-settings-daily-360.png') });

    await intakeAnswered('Spring catalogue', { about: 'Paper and ink.', tagline: 'Printed with care' });
    await intakeAnswered('Winter campaign', { site: 'https://winter.example.com' });
    const before = (await ownerOutbox()).length;
    expect((await test.post('/v1/test_helpers/advance_clock', { seconds: 26 * 3600 })).status).toBe(200);
    const digests = (await ownerOutbox()).filter((m) => m.subject?.includes('Daily summary'));
    expect(digests).toHaveLength(1);
    expect((await ownerOutbox()).length).toBe(before + 1);
    await photographEmail(digests[0]?.html ?? '', 'digest');
  });
});
