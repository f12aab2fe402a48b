import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ARTIFACTS, chromiumAvailable, launchChromium } from './helpers/browser.js';
import { client, type Client } from './helpers/http.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { SECTIONED_ITEMS } from './helpers/sectioned-request.js';

/**
 * The portal page in chromium: the request in three sections with their progress, a question that
 * appears once "Yes" is chosen, and the conversation on an item (the sender's comment shown escaped,
 * the client's reply sent from the page's form). Screenshots at 360 and 1280 px.
 */
const available = chromiumAvailable('richer requests browser test');

const ITEMS = SECTIONED_ITEMS;

describe.skipIf(!available)('sections, a conditional question and comments on the portal page', () => {
  let server: TestServer;
  let api: Client;
  let browser: Browser;

  beforeAll(async () => {
    await mkdir(ARTIFACTS, { recursive: true });
    server = await startTestServer('sqlite');
    const account = await server.createAccount({ plan: 'agency' });
    api = client(server.url, account.test_key);
    await api.patch('/v1/account', { name: 'Fjord Studio' });
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await server?.stop();
  });

  it('shows sections, reveals the logo question after "Yes", and carries the conversation', async () => {
    const created = await api.post<{ intake_id: string }>('/v1/intakes', {
      project_name: 'Bakery website',
      client: { email: 'dana@example.com', name: 'Dana' },
      items: ITEMS,
    });
    expect(created.status, created.text).toBe(201);
    const id = created.body.intake_id;
    const comment = await api.post(`/v1/intakes/${id}/items/company/comments`, {
      body: 'Is this the <b>registered</b> name?\nAs on your invoices, please.',
    });
    expect(comment.status, comment.text).toBe(201);

    for (const width of [360, 1280]) {
      const page = await browser.newPage({ viewport: { width, height: 900 } });
      await page.goto(`${server.url}/portal/${id}`);
      expect(await page.locator('.section-title').allTextContents()).toEqual([
        'About you',
        'Brand',
        'Access',
      ]);
      // The sender's markup is text, not markup.
      await expect
        .poll(() => page.locator('#comments-company .comment-body').first().textContent())
        .toContain('<b>registered</b>');
      expect(await page.locator('#comments-company b').count()).toBe(0);
      if (width === 360) {
        expect(await page.locator('#item-logo_link').count()).toBe(0);
        await page.locator('#item-has_logo').getByText('Yes').click();
        await page.waitForSelector('#item-logo_link', { timeout: 8000 });
        await page.locator('#comments-company summary').click();
        await page.fill('#comment-company', 'Yes: Bakery Nord GmbH.');
        await Promise.all([
          page.waitForURL(/#comments-company$/, { timeout: 8000 }),
          page.getByText('Send comment').first().click(),
        ]);
        await expect
          .poll(() => page.locator('#comments-company .from-client').textContent())
          .toContain('Bakery Nord GmbH.');
      }
      await page.screenshot({ path: join(ARTIFACTS, `richer-requests-${width}.png`), fullPage: true });
      await page.close();
    }
    const listed = await api.get<{ comments: { author: string }[] }>(`/v1/intakes/${id}/comments`);
    expect(listed.body.comments.map((c) => c.author)).toEqual(['owner', 'client']);
  });
});
