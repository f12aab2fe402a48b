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
import { startTestServer, type TestServer } from './helpers/server.js';

/**
 * The newer item types and the brief in Debian's chromium, on a phone-sized screen: a client reads
 * the brief (with its line breaks and a file to download), fills a pattern text, url, email, phone,
 * date, yes/no, number, select, multiselect and colour list, meets the browser's own checks in the
 * page's language, submits everything, and never sees the account holder's decisions.
 */
const available = chromiumAvailable('portal type browser tests');

const OPTIONS = [
  { value: 'web', label: 'Website' },
  { value: 'print', label: 'Print' },
  { value: 'social', label: 'Social media' },
];
const ITEMS = [
  { key: 'vat_id', label: 'VAT number', type: 'text', constraints: { pattern: '[A-Z]{2}[0-9]{9}' } },
  { key: 'website', label: 'Website', type: 'url' },
  { key: 'billing_email', label: 'Billing email', type: 'email' },
  { key: 'phone', label: 'Phone', type: 'phone' },
  { key: 'launch', label: 'Launch date', type: 'date', constraints: { min_date: '2026-01-01' } },
  { key: 'has_domain', label: 'Do you own your domain?', type: 'boolean' },
  { key: 'pages', label: 'How many pages?', type: 'number', constraints: { min: 1, max: 50, integer: true } },
  { key: 'tier', label: 'Package', type: 'select', options: OPTIONS },
  {
    key: 'channels',
    label: 'Channels',
    type: 'multiselect',
    options: OPTIONS,
    constraints: { max_count: 2 },
  },
  { key: 'palette', label: 'Brand colours', type: 'color_list', constraints: { min_count: 2, max_count: 4 } },
  { key: 'go_live', label: 'Internal: launch in phases?', type: 'boolean', assignee: 'owner' },
];

describe.skipIf(!available)('the portal in a browser: new item types and the brief', () => {
  let server: TestServer;
  let api: Client;
  let apiKey: string;
  let browser: Browser;

  beforeAll(async () => {
    await mkdir(ARTIFACTS, { recursive: true });
    server = await startTestServer('sqlite');
    const account = await server.createAccount({ plan: 'agency' });
    apiKey = account.live_key;
    api = client(server.url, apiKey);
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await server?.stop();
  });

  const card = (page: Page, key: string) => page.locator(`#item-${key}`);
  const poll = <T>(read: () => T | Promise<T>, timeout = 10_000) => expect.poll(read, { timeout });
  const valueOf = async (id: string, key: string) => {
    const row = await server.server.services.db.kysely
      .selectFrom('intake_items')
      .select(['status', 'value_json'])
      .where('intake_id', '=', id)
      .where('key', '=', key)
      .executeTakeFirstOrThrow();
    return {
      status: row.status,
      value: row.value_json === null ? null : (JSON.parse(row.value_json) as unknown),
    };
  };

  async function expectAccessible(page: Page): Promise<void> {
    expect(await seriousAccessibilityProblems(page, ['best-practice'])).toEqual([]);
  }

  it('reads the brief, fills every new type, meets the browser checks and submits', async () => {
    const created = await api.post<{ intake_id: string }>('/v1/intakes', {
      project_name: 'Brand launch',
      client: { email: 'dana@example.com', name: 'Dana' },
      client_brief: 'We are launching your new brand.\nThe style guide is attached: <read it first>.',
      items: ITEMS,
    });
    expect(created.status).toBe(201);
    const id = created.body.intake_id;
    const attached = await fetch(`${server.url}/v1/intakes/${id}/brief_files`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${apiKey}`,
        'content-type': 'text/plain',
        'x-filename': 'style-guide.txt',
      },
      body: 'Use the colours as given.\n',
    });
    expect(attached.status).toBe(201);

    const context = await browser.newContext({
      viewport: { width: 360, height: 780 },
      deviceScaleFactor: 2,
      hasTouch: true,
    });
    const page = await context.newPage();
    page.on('pageerror', (error) => {
      throw error;
    });
    await page.goto(`${server.url}/portal/${id}`);

    // The brief, above the items: text escaped, line breaks shown, the file a download link.
    const brief = page.locator('section.brief');
    await poll(() => brief.locator('p').innerText()).toBe(
      'We are launching your new brand.\nThe style guide is attached: <read it first>.',
    );
    expect(await brief.locator('p b, p read').count()).toBe(0);
    const link = brief.locator('.brief-files a');
    expect(await link.innerText()).toBe('style-guide.txt');
    const box = await brief.boundingBox();
    const firstItem = await card(page, 'vat_id').boundingBox();
    expect((box?.y ?? 0) < (firstItem?.y ?? 0)).toBe(true);
    const download = await fetch((await link.getAttribute('href')) ?? '');
    expect(await download.text()).toBe('Use the colours as given.\n');

    // Decisions are the account holder's: not on the page, not in the count.
    expect(await card(page, 'go_live').count()).toBe(0);
    await poll(() => page.locator('.progress-text').innerText()).toBe('0 of 10 done');
    await page.screenshot({ path: join(ARTIFACTS, '20-types-opened.png'), fullPage: true });
    await expectAccessible(page);

    // The browser's own checks, in the page's language, before anything is sent.
    const vat = card(page, 'vat_id');
    await vat.locator('input').fill('de12');
    await vat.getByRole('button', { name: 'Submit' }).click();
    await poll(() => vat.innerText()).toContain('This does not have the expected form.');
    expect((await valueOf(id, 'vat_id')).status).toBe('pending');
    await vat.locator('input').fill('DE123456789');
    await vat.getByRole('button', { name: 'Submit' }).click();
    await poll(() => vat.getAttribute('data-status')).toBe('submitted');

    const pages = card(page, 'pages');
    await pages.locator('input').fill('80');
    await pages.getByRole('button', { name: 'Submit' }).click();
    await poll(() => pages.innerText()).toContain('Must be at most 50.');
    await pages.locator('input').fill('12');

    await card(page, 'website').locator('input').fill('https://fjord.example');
    await card(page, 'billing_email').locator('input').fill('billing@fjord.example');
    await card(page, 'phone').locator('input').fill('+47 22 12 34 56');
    await card(page, 'launch').locator('input').fill('2026-05-04');
    await card(page, 'has_domain').getByLabel('Yes').check();
    await card(page, 'tier').getByLabel('Print').check();
    await card(page, 'channels').getByLabel('Website').check();
    await card(page, 'channels').getByLabel('Social media').check();
    await card(page, 'palette').locator('input[type="text"]').nth(0).fill('#1A2B3C');
    await page.screenshot({ path: join(ARTIFACTS, '21-types-filled.png'), fullPage: true });

    for (const key of [
      'pages',
      'website',
      'billing_email',
      'phone',
      'launch',
      'has_domain',
      'tier',
      'channels',
    ]) {
      await card(page, key).getByRole('button', { name: 'Submit' }).click();
      await poll(() => card(page, key).getAttribute('data-status'), 10_000).toBe('submitted');
    }
    // The colour list needs two colours: the page says so before sending; the second row takes one.
    const palette = card(page, 'palette');
    await palette.getByRole('button', { name: 'Submit' }).click();
    await poll(() => palette.locator('.form-error').innerText()).toBe('Please add at least 2.');
    expect((await valueOf(id, 'palette')).status).toBe('pending');
    await palette.locator('input[type="text"]').nth(1).fill('ffffff');
    await palette.getByRole('button', { name: 'Submit' }).click();
    await poll(() => palette.getAttribute('data-status'), 10_000).toBe('submitted');

    expect(await valueOf(id, 'pages')).toEqual({ status: 'submitted', value: 12 });
    expect((await valueOf(id, 'phone')).value).toBe('+4722123456');
    expect((await valueOf(id, 'has_domain')).value).toBe(true);
    expect((await valueOf(id, 'channels')).value).toEqual(['web', 'social']);
    expect((await valueOf(id, 'palette')).value).toEqual(['#1a2b3c', '#ffffff']);
    await poll(() => page.locator('.progress-text').innerText()).toBe('10 of 10 done');

    await page.reload();
    // Sent, and still the client's to change until it is reviewed: the form keeps the answer.
    expect(await card(page, 'tier').getByLabel('Print').isChecked()).toBe(true);
    expect(await card(page, 'has_domain').getByLabel('Yes').isChecked()).toBe(true);
    await api.post(`/v1/intakes/${id}/items/tier/approve`);
    await page.reload();
    expect(await card(page, 'tier').locator('.value').innerText()).toBe('Print');
    await page.screenshot({ path: join(ARTIFACTS, '22-types-submitted.png'), fullPage: true });
    await expectAccessible(page);
    await context.close();
  }, 120_000);
});
