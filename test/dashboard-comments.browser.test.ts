import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ARTIFACTS,
  chromiumAvailable,
  launchChromium,
  seriousAccessibilityProblems,
} from './helpers/browser.js';
import { client, type Client } from './helpers/http.js';
import { signedInOwner, signedInPage } from './helpers/signed-in.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { SECTIONED_ITEMS } from './helpers/sectioned-request.js';

/**
 * The conversation in the dashboard, in Debian's chromium: the owner opens a request in three
 * sections whose logo question "No" left unasked (shown as not needed, with why), reads the client's
 * comment under its item, and replies from the item's form in place; the client then reads the reply
 * on their page. Both pages are checked with axe-core and photographed at 1280 and 360 px.
 */
const available = chromiumAvailable('dashboard comments browser test');

const ITEMS = SECTIONED_ITEMS;

describe.skipIf(!available)('the conversation on an item, from the dashboard to the portal', () => {
  let server: TestServer;
  let browser: Browser;
  let api: Client;
  let app: string;
  let accountId: string;

  beforeAll(async () => {
    await mkdir(ARTIFACTS, { recursive: true });
    server = await startTestServer('sqlite');
    app = server.server.services.config.appUrl;
    const account = await server.createAccount({ plan: 'agency' });
    accountId = account.account_id;
    api = client(server.url, account.live_key);
    expect((await api.patch('/v1/account', { name: 'Fjord Studio' })).status).toBe(200);
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await server?.stop();
  });

  /** Checked with axe-core, then photographed whole at 1280 and 360 px. */
  async function photograph(page: Page, name: string): Promise<void> {
    expect(await seriousAccessibilityProblems(page)).toEqual([]);
    for (const width of [1280, 360]) {
      await page.setViewportSize({ width, height: 900 });
      await page.screenshot({ path: join(ARTIFACTS, `${name}-${width}.png`), fullPage: true });
    }
  }

  it('the owner reads the client’s comment and replies in place; the client reads the reply', async () => {
    const created = await api.post<{ intake_id: string }>('/v1/intakes', {
      project_name: 'Bakery website',
      client: { email: 'dana@example.com', name: 'Dana' },
      items: ITEMS,
    });
    expect(created.status, created.text).toBe(201);
    const id = created.body.intake_id;
    const portal = client(server.url);
    for (const [key, value] of [
      ['company', 'Bakery Nord'],
      ['has_logo', false],
    ] as const) {
      const saved = await portal.call('PUT', `/portal/api/${id}/items/${key}`, { body: { value } });
      expect(saved.status, saved.text).toBe(200);
    }
    const said = await portal.post(`/portal/api/${id}/items/company/comments`, {
      body: 'Should this be the <b>registered</b> name?\nWe trade as Bakery Nord.',
    });
    expect(said.status, said.text).toBe(201);

    const owner = await signedInOwner(server, accountId);
    const page = await signedInPage(browser, app, owner);
    await page.goto(`${app}/dashboard/intakes/${id}`);
    expect(await page.locator('.item-section h3').allTextContents()).toEqual([
      'About you',
      'Brand',
      'Access',
    ]);
    const brand = page.locator('.item-section', { has: page.getByRole('heading', { name: 'Brand' }) });
    expect(await brand.locator('.section-progress').textContent()).toBe('0 of 1 done');
    const logo = page.locator('section[data-item="logo_link"]');
    expect(await logo.locator('.not-needed-reason').textContent()).toBe(
      'Not needed: asked only when “Do you have a logo?” is Yes',
    );
    // The client's words as text, under their name, and the reply form open beneath them.
    const thread = page.locator('#thread-company');
    const theirs = thread.locator('.comment.from-client');
    expect(await theirs.locator('.comment-meta strong').textContent()).toBe('Dana (client)');
    expect(await theirs.locator('.comment-body').textContent()).toContain('<b>registered</b>');
    expect(await thread.locator('b').count()).toBe(0);

    await page.evaluate(() => {
      (globalThis as unknown as { stillThisPage: boolean }).stillThisPage = true;
    });
    await thread.getByLabel('Your comment').fill('The registered name, please: Bakery Nord GmbH.');
    await thread.getByRole('button', { name: 'Send comment' }).click();
    const mine = page.locator('#thread-company .comment.from-owner');
    await mine.waitFor();
    expect(await mine.locator('.comment-body').textContent()).toBe(
      'The registered name, please: Bakery Nord GmbH.',
    );
    // Signed by the person who wrote it (their name, else their email).
    const person = await server.server.services.db.kysely
      .selectFrom('account_users')
      .select(['name', 'email'])
      .where('id', '=', owner.userId)
      .executeTakeFirstOrThrow();
    expect(await mine.locator('.comment-meta strong').textContent()).toBe(person.name ?? person.email);
    await page.locator('section[data-item="company"] .notice').getByText('Comment sent').waitFor();
    // In place: the same page, not a reload.
    expect(
      await page.evaluate(() => (globalThis as unknown as { stillThisPage?: boolean }).stillThisPage),
    ).toBe(true);
    await photograph(page, 'dashboard-comments');
    await page.context().close();

    const clientPage = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await clientPage.goto(`${server.url}/portal/${id}`);
    const reply = clientPage.locator('#comments-company .comment.from-owner');
    expect(await reply.locator('.comment-body').textContent()).toBe(
      'The registered name, please: Bakery Nord GmbH.',
    );
    // The client reads the account's name, never which person or key wrote.
    expect(await reply.locator('.comment-meta strong').textContent()).toBe('Fjord Studio');
    expect(await clientPage.locator('h2.section-title').allTextContents()).toEqual([
      'About you',
      'Brand',
      'Access',
    ]);
    // A section's heading is h2, its items' titles h3.
    expect(await clientPage.locator('h3#item-company-title').count()).toBe(1);
    await photograph(clientPage, 'dashboard-comments-portal');
    await clientPage.close();
  });
});
