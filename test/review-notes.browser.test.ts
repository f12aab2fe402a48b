import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { type Browser } from 'playwright-core';
import {
  ARTIFACTS,
  chromiumAvailable,
  launchChromium,
  seriousAccessibilityProblems,
} from './helpers/browser.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, type Client } from './helpers/http.js';
import { startTestServer, type TestServer } from './helpers/server.js';

/**
 * The reviewer's notes in the portal, in Debian's chromium: a revision note and an approval note on
 * their items, readable before any script runs, with an axe-core check. Screenshot in test/artifacts/.
 */
const available = chromiumAvailable('review-note browser test');

describe.skipIf(!available)('review notes in the portal, in a browser', () => {
  let server: TestServer;
  let api: Client;
  let browser: Browser;

  beforeAll(async () => {
    await mkdir(ARTIFACTS, { recursive: true });
    server = await startTestServer('sqlite');
    api = client(server.url, (await server.createAccount({ plan: 'agency' })).test_key);
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await server?.stop();
  });

  it('shows the revision note and the approval note on their items, accessibly', async () => {
    const created = await api.post<{ intake_id: string }>('/v1/intakes', {
      project_name: 'Website copy',
      client: { email: 'dana@example.com', name: 'Dana' },
      items: [
        { key: 'about', label: 'About your company', type: 'longtext' },
        { key: 'tagline', label: 'Tagline', type: 'text' },
      ],
    });
    const id = created.body.intake_id;
    await api.post(`/v1/test_helpers/intakes/${id}/simulate`, { action: 'submit' });
    await api.post(`/v1/intakes/${id}/revision`, {
      item_key: 'about',
      note: 'Please add the founding year.',
    });
    await api.post(`/v1/intakes/${id}/items/tagline/approve`, { note: 'Love it <3 — thank you!' });

    const context = await browser.newContext({
      viewport: { width: 360, height: 780 },
      javaScriptEnabled: false,
    });
    const page = await context.newPage();
    await page.goto(`${server.url}/portal/${id}`);
    const about = page.locator('#item-about');
    await expect(about.locator('.revision-note').textContent()).resolves.toBe(
      'Please add the founding year.',
    );
    const tagline = page.locator('#item-tagline');
    await expect(tagline.locator('.review .revision-title').textContent()).resolves.toBe(
      'Note from the reviewer:',
    );
    // Text, never markup: the note is escaped.
    await expect(tagline.locator('.review .revision-note').textContent()).resolves.toBe(
      'Love it <3 — thank you!',
    );
    await page.screenshot({ path: join(ARTIFACTS, 'portal-review-notes.png'), fullPage: true });
    await context.close();

    const scripted = await browser.newContext({ viewport: { width: 360, height: 780 } });
    const live = await scripted.newPage();
    await live.goto(`${server.url}/portal/${id}`);
    expect(await seriousAccessibilityProblems(live)).toEqual([]);
    await scripted.close();
  });
});
