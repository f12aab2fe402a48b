import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ARTIFACTS,
  chromiumAvailable,
  launchChromium,
  seriousAccessibilityProblems,
} from './helpers/browser.js';
import { client, type Client } from './helpers/http.js';
import { signedInOwner } from './helpers/signed-in.js';
import { startTestServer, type TestServer } from './helpers/server.js';

/**
 * The owner builds a request in Debian's chromium, at desktop and phone width: starts from the
 * brand kit, adds kinds of answer from the palette (a postcode in words, choices, a form field by
 * field: no JSON, no regular expression typed), previews it as the client, sends it, then edits the
 * sent intake (due date, a new item, a label). axe-core checks every builder page; screenshots go
 * to test/artifacts/.
 */
const available = chromiumAvailable('builder browser tests');

interface IntakeRecord {
  status: string;
  due_date: string | null;
  client_last_seen: string | null;
  items: {
    key: string;
    label: string;
    type: string;
    constraints: Record<string, unknown>;
    schema: unknown;
  }[];
}

describe.skipIf(!available).each([
  { width: 1280, height: 900, name: 'desktop' },
  { width: 360, height: 740, name: 'phone' },
])('the intake builder in a browser at $width px', ({ width, height, name }) => {
  let server: TestServer;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let app: string;
  let api: Client;
  let intakeId = '';

  beforeAll(async () => {
    await mkdir(ARTIFACTS, { recursive: true });
    server = await startTestServer('sqlite');
    app = server.server.services.config.appUrl;
    const account = await server.createAccount({ plan: 'agency' });
    api = client(server.url, account.live_key);
    // Signed in as the emailed link leaves it (the sign-in itself is the dashboard tests' subject).
    const owner = await signedInOwner(server, account.account_id);
    const [cookieName, cookieValue] = owner.cookie.split('=');
    browser = await launchChromium();
    context = await browser.newContext({ viewport: { width, height } });
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: app });
    await context.addCookies([{ name: cookieName ?? '', value: cookieValue ?? '', url: app }]);
    page = await context.newPage();
    page.on('dialog', (dialog) => void dialog.accept());
    page.setDefaultTimeout(8000);
  });
  afterAll(async () => {
    await browser?.close();
    await server?.stop();
  });

  async function shot(step: string): Promise<void> {
    await page.screenshot({ path: join(ARTIFACTS, `builder-${name}-${step}.png`), fullPage: true });
  }

  async function expectAccessible(): Promise<void> {
    expect(await seriousAccessibilityProblems(page)).toEqual([]);
  }

  /** The card the palette added last. */
  const lastCard = () => page.locator('#item-rows [data-item-card]').last();

  it('builds a ten-item request from the brand kit with the palette, without JSON or a regex', async () => {
    await page.goto(`${app}/dashboard/intakes/new`);
    await expectAccessible();
    await page.getByRole('link', { name: 'Brand kit' }).click();
    await page.waitForURL(/start=brand_kit/);
    await expect(page.locator('#item-rows [data-item-card]').count()).resolves.toBe(6);
    await page.getByLabel('Project').fill('Bakery relaunch');
    await page.getByLabel('Client email').fill('dana@example.com');
    await page.getByLabel('Client name').fill('Dana');

    // Only the chosen kind's constraints show: the logo card shows the file group, not the text format.
    const logo = page.locator('#item-card-0');
    await expect(logo.getByText('Which files').isVisible()).resolves.toBe(true);
    await expect(logo.getByText('What the answer looks like').isVisible()).resolves.toBe(false);
    await expect(logo.locator('input[name="items[0][key]"]').isVisible()).resolves.toBe(false);
    await page.locator('#item-0-label').fill('Your logo (vector)');

    // 7: a postcode, in words.
    await page.locator('button[data-add-type="text"]').click();
    await lastCard().locator('input[data-label]').fill('Postcode of the shop');
    await expect(lastCard().getByText('Which files').isVisible()).resolves.toBe(false);
    await lastCard().getByLabel('Format').selectOption({ label: 'Postcode (Germany, 5 digits)' });
    // 8: several choices.
    await page.locator('button[data-add-type="multiselect"]').click();
    await lastCard().locator('input[data-label]').fill('Where you sell');
    await lastCard().getByLabel('One choice per line').fill('Shop\nMarket\nOnline');
    // 9: a form, field by field.
    await page.locator('button[data-add-type="structured"]').click();
    const form = lastCard();
    await form.locator('input[data-label]').fill('Opening hours');
    await form.getByLabel('Field name').nth(0).fill('Weekdays');
    await form.getByLabel('Field name').nth(1).fill('Saturday');
    await form.getByRole('button', { name: 'Add a field' }).click();
    await form.getByLabel('Field name').nth(2).fill('Closed on holidays');
    await form.getByLabel('Kind', { exact: true }).nth(2).selectOption({ label: 'Yes or no' });
    // 10: a photo from a preset, on a card whose kind is changed after adding it.
    await page.locator('button[data-add-type="file"]').click();
    const photo = lastCard();
    await photo.locator('input[data-label]').fill('Shop photo');
    await photo.locator('select[data-type-select]').selectOption({ label: 'Image or logo' });
    await expect(photo.getByText('Transparent background (for logos)').isVisible()).resolves.toBe(true);
    await photo.locator('select[data-preset]').selectOption('print_photo');
    await expect(photo.locator('input[value="jpg"]').isChecked()).resolves.toBe(true);
    await expect(photo.locator('input[name$="[min_width]"]').inputValue()).resolves.toBe('3000');

    await expect(page.locator('#item-rows [data-item-card]').count()).resolves.toBe(10);
    await expectAccessible();
    await shot('new');
    // Before saving: the cards as the client would see them, in a new tab, nothing created.
    const [tab] = await Promise.all([
      context.waitForEvent('page'),
      page.getByRole('button', { name: 'Preview as the client (new tab)' }).click(),
    ]);
    await tab.getByRole('heading', { name: 'Bakery relaunch' }).waitFor();
    await expect(tab.getByText('Postcode of the shop').first().isVisible()).resolves.toBe(true);
    expect(await seriousAccessibilityProblems(tab)).toEqual([]);
    await tab.screenshot({ path: join(ARTIFACTS, `builder-${name}-unsaved-preview.png`) });
    await tab.close();
    expect((await api.get<{ total: number }>('/v1/intakes')).body.total).toBe(0);
    await page.getByRole('button', { name: 'Save as draft and preview' }).click();
    await page.waitForURL(/\/preview\?notice=created/);
    intakeId = new URL(page.url()).pathname.split('/')[3] ?? '';
    const intake = (await api.get<IntakeRecord>(`/v1/intakes/${intakeId}`)).body;
    expect(intake.status).toBe('draft');
    expect(intake.items).toHaveLength(10);
    const byLabel = new Map(intake.items.map((i) => [i.label, i]));
    expect(byLabel.get('Your logo (vector)')).toMatchObject({ key: 'logo', type: 'image' });
    expect(byLabel.get('Postcode of the shop')).toMatchObject({
      key: 'postcode_of_the_shop',
      constraints: { pattern: '[0-9]{5}' },
    });
    expect(byLabel.get('Shop photo')).toMatchObject({ type: 'image', constraints: { min_width: 3000 } });
    expect((byLabel.get('Shop photo')?.constraints.formats as string[]).sort()).toEqual(['jpg', 'png']);
    expect(byLabel.get('Opening hours')?.schema).toMatchObject({
      properties: {
        weekdays: { type: 'string' },
        saturday: { type: 'string' },
        closed_on_holidays: { type: 'boolean' },
      },
    });
  });

  // axe-core needs script, so this page is checked for accessibility with script (above) only.
  it('works without script: every group under its heading, buttons post the form back', async () => {
    const bare = await browser.newContext({ viewport: { width, height }, javaScriptEnabled: false });
    await bare.addCookies(await context.cookies());
    const plain = await bare.newPage();
    plain.setDefaultTimeout(8000);
    await plain.goto(`${app}/dashboard/intakes/new`);
    const card = plain.locator('#item-card-0');
    await expect(card.getByText('Which files').isVisible()).resolves.toBe(true);
    await expect(card.getByText('What the answer looks like').isVisible()).resolves.toBe(true);
    await expect(card.getByText('(for: Image or logo, One file, Several files)').isVisible()).resolves.toBe(
      true,
    );
    await plain.locator('#item-0-label').fill('Contract');
    await plain.locator('#item-0-type').selectOption({ label: 'One file' });
    await plain.locator('button[data-add-type="date"]').click();
    // Project and client are still empty: the round trip skips the form's checks (formnovalidate).
    await plain.waitForURL(/\/dashboard\/intakes#added$/);
    await expect(plain.locator('#item-0-label').inputValue()).resolves.toBe('Contract');
    await expect(plain.locator('#item-1-type').inputValue()).resolves.toBe('date');
    await plain.screenshot({ path: join(ARTIFACTS, `builder-${name}-no-script.png`), fullPage: false });
    await bare.close();
  });

  it('previews the draft as the client sees it, then sends it', async () => {
    await expectAccessible();
    const frame = page.frameLocator('iframe[title="The client’s page"]');
    await expect(frame.getByRole('heading', { name: 'Bakery relaunch' }).isVisible()).resolves.toBe(true);
    await expect(frame.getByText('Postcode of the shop').first().isVisible()).resolves.toBe(true);
    await shot('preview');
    await page.getByRole('button', { name: 'Send to client' }).click();
    await page.waitForURL(new RegExp(`/dashboard/intakes/${intakeId}\\?notice=sent`));
    await shot('detail');
    const intake = (await api.get<IntakeRecord>(`/v1/intakes/${intakeId}`)).body;
    expect(intake.status).toBe('sent');
    expect(intake.client_last_seen).toBeNull();
    // The portal link: selectable text, and a copy button with script.
    await expect(page.locator('#portal-link').textContent()).resolves.toBe(`${app}/portal/${intakeId}`);
    await page.getByRole('button', { name: 'Copy link' }).click();
    await page.getByRole('button', { name: 'Copied' }).waitFor();
    await expect(page.evaluate<string>('navigator.clipboard.readText()')).resolves.toBe(
      `${app}/portal/${intakeId}`,
    );
  });

  it('saves a template with the same cards', async () => {
    await page.goto(`${app}/dashboard/templates/new`);
    await expectAccessible();
    await page.getByLabel('Name', { exact: true }).fill('Shop basics');
    await page.locator('#item-0-label').fill('Shop name');
    await page.locator('button[data-add-type="file_list"]').click();
    await lastCard().locator('input[data-label]').fill('Shop name');
    await lastCard().locator('select[data-preset]').selectOption('document');
    await shot('template');
    await page.getByRole('button', { name: 'Save template' }).click();
    await page.waitForURL(/\/dashboard\/templates\?notice=saved/);
    const templates = await api.get<{
      templates: { name: string; items: { key: string; type: string; constraints: object }[] }[];
    }>('/v1/templates');
    const saved = templates.body.templates.find((t) => t.name === 'Shop basics');
    expect(saved?.items.map((i) => [i.key, i.type])).toEqual([
      ['shop_name', 'text'],
      ['shop_name_2', 'file_list'],
    ]);
    expect(saved?.items[1]?.constraints).toEqual({ formats: ['pdf'] });
    await page.goto(`${app}/dashboard/intakes/${intakeId}`);
  });

  it('edits the sent intake: due date, a new item and a label', async () => {
    await page.getByRole('link', { name: 'Edit' }).click();
    await page.waitForURL(/\/edit$/);
    await expectAccessible();
    await page.getByLabel('Due date').fill('2099-03-01');
    await page.getByRole('button', { name: 'Save details' }).click();
    await page.waitForURL(/\/edit\?notice=saved/);

    const add = page.locator('#add-items');
    await add.locator('input[data-label]').first().fill('Your website');
    await add.locator('select[data-type-select]').first().selectOption({ label: 'Web address' });
    await add.getByRole('button', { name: 'Add to the intake' }).click();
    await page.waitForURL(/\/edit\?notice=saved/);

    const postcode = page.locator('#item-form-postcode_of_the_shop');
    // Each item is one folded line until opened.
    await expect(postcode.locator('input[data-label]').isVisible()).resolves.toBe(false);
    await postcode.locator('summary').first().click();
    await postcode.locator('input[data-label]').fill('Postcode of your shop');
    await postcode.getByRole('button', { name: 'Save this item' }).click();
    await page.waitForURL(/\/edit\?notice=saved/);
    await expectAccessible();
    await shot('edit');

    // The client answers "Fonts you use"; making it digits only would throw that answer away: asked first.
    const portal = client(server.url);
    const saved = await portal.call('PUT', `/portal/api/${intakeId}/items/fonts`, {
      body: { value: 'Inter' },
    });
    expect(saved.status).toBe(200);
    expect((await portal.post(`/portal/api/${intakeId}/items/fonts/submit`)).status).toBe(200);
    await page.reload();
    const fonts = page.locator('#item-form-fonts');
    await fonts.locator('summary').first().click();
    await fonts.getByLabel('Format').selectOption({ label: 'Digits only' });
    await fonts.getByRole('button', { name: 'Save this item' }).click();
    await page.getByText('The client’s answer would be discarded').waitFor();
    await expectAccessible();
    await page.locator('#question').screenshot({ path: join(ARTIFACTS, `builder-${name}-question.png`) });
    await page.getByRole('button', { name: 'Discard the answer and save' }).click();
    await page.waitForURL(/\/edit\?notice=saved/);

    const intake = (await api.get<IntakeRecord>(`/v1/intakes/${intakeId}`)).body;
    expect(intake.items.find((i) => i.key === 'fonts')).toMatchObject({
      status: 'pending',
      constraints: { pattern: '[0-9]+' },
    });
    expect(intake.due_date).toBe('2099-03-01');
    expect(intake.items).toHaveLength(11);
    expect(intake.items.find((i) => i.key === 'your_website')).toMatchObject({ type: 'url' });
    expect(intake.items.find((i) => i.key === 'postcode_of_the_shop')).toMatchObject({
      label: 'Postcode of your shop',
      constraints: { pattern: '[0-9]{5}' },
    });
  });
});
