import { createHash, randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Browser, type BrowserContext, type Page } from 'playwright-core';
import {
  ARTIFACTS,
  chromiumAvailable,
  launchChromium,
  seriousAccessibilityProblems,
} from './helpers/browser.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, type Client } from './helpers/http.js';
import { jpeg, png } from './helpers/images.js';
import { startTestServer, type TestServer } from './helpers/server.js';

/**
 * A client plays the portal in Debian's chromium (headless, never downloaded): opens the link, fills
 * text and structured items, uploads images and files with progress, interrupts a 20 MB upload and
 * resumes it after a reload, meets constraint errors, submits everything, reloads and sees it saved;
 * at 360 px wide, in German too, with an axe-core check. Screenshots land in test/artifacts/.
 */
const available = chromiumAvailable('portal browser tests');

const ITEMS = [
  {
    key: 'logo',
    label: 'Your logo',
    type: 'image',
    help: 'The version you use on your letterhead.',
    constraints: { formats: ['png', 'svg'], min_width: 400, transparent_background: true },
  },
  {
    key: 'photos',
    label: 'Team photos',
    type: 'file_list',
    constraints: { formats: ['jpg', 'png'], min_count: 2, max_count: 3 },
  },
  { key: 'video', label: 'Welcome video', type: 'file', constraints: { max_bytes: 40 * 1024 * 1024 } },
  { key: 'about', label: 'About your company', type: 'longtext', constraints: { max_chars: 300 } },
  {
    key: 'brand',
    label: 'Brand facts',
    type: 'structured',
    schema: {
      type: 'object',
      required: ['company', 'founded'],
      properties: {
        company: { type: 'string', title: 'Company name' },
        founded: { type: 'integer', minimum: 1800, title: 'Year founded' },
        email: { type: 'string', format: 'email', title: 'Contact email' },
      },
    },
  },
  { key: 'wp_password', label: 'WordPress password', type: 'secret' },
  { key: 'website', label: 'Current website', type: 'url', required: false },
];

describe.skipIf(!available)('the client portal in a browser', () => {
  let server: TestServer;
  let api: Client;
  let browser: Browser;
  let work: string;

  beforeAll(async () => {
    await mkdir(ARTIFACTS, { recursive: true });
    work = await mkdtemp(join(tmpdir(), 'portal-browser-'));
    server = await startTestServer('sqlite');
    const account = await server.createAccount({ plan: 'agency' });
    api = client(server.url, account.live_key);
    const logo = `<svg xmlns="http://www.w3.org/2000/svg" width="120" height="32"><rect width="32" height="32" rx="8" fill="#0f766e"/><path d="M8 22 16 8l8 14z" fill="#fff"/></svg>`;
    await api.patch('/v1/account', {
      name: 'Fjord Studio',
      branding: {
        logo_url: `data:image/svg+xml;base64,${Buffer.from(logo).toString('base64')}`,
        accent_color: '#0f766e',
      },
    });
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await server?.stop();
    if (work) await rm(work, { recursive: true, force: true });
  });

  async function createIntake(language: string, items: unknown[] = ITEMS): Promise<string> {
    const created = await api.post<{ intake_id: string }>('/v1/intakes', {
      project_name: 'Website refresh',
      client: { email: 'dana@example.com', name: 'Dana', language },
      due_date: '2026-12-15',
      client_brief: 'We are rebuilding your website.\nPlease send the items below so we can start.',
      items,
    });
    expect(created.status).toBe(201);
    return created.body.intake_id;
  }

  async function phone(locale?: string): Promise<{ context: BrowserContext; page: Page }> {
    const context = await browser.newContext({
      ...(locale ? { locale } : {}),
      viewport: { width: 360, height: 780 },
      deviceScaleFactor: 2,
      hasTouch: true,
    });
    const page = await context.newPage();
    page.on('pageerror', (error) => {
      throw error;
    });
    // Reloading with saved answers not sent yet asks first (portal-send.browser.test checks that).
    page.on('dialog', (dialog) => void dialog.accept());
    return { context, page };
  }

  async function shot(page: Page, name: string): Promise<void> {
    await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
  }

  async function expectAccessible(page: Page): Promise<void> {
    expect(await seriousAccessibilityProblems(page, ['best-practice'])).toEqual([]);
  }

  async function itemRow(id: string, key: string) {
    return server.server.services.db.kysely
      .selectFrom('intake_items')
      .select(['status', 'value_json', 'secret_ciphertext'])
      .where('intake_id', '=', id)
      .where('key', '=', key)
      .executeTakeFirstOrThrow();
  }

  async function filesOf(id: string, key: string) {
    return server.server.services.db.kysely
      .selectFrom('item_files')
      .select(['name', 'size', 'sha256'])
      .where('intake_id', '=', id)
      .where('item_key', '=', key)
      .execute();
  }

  const card = (page: Page, key: string) => page.locator(`#item-${key}`);
  /** Polls until the expectation holds (autosave waits 1.2 s after typing stops). */
  const poll = <T>(read: () => T | Promise<T>, timeout = 10_000) => expect.poll(read, { timeout });

  it('plays a client through every kind of item on a phone', async () => {
    const id = await createIntake('en');
    const { context, page } = await phone();
    await page.goto(`${server.url}/portal/${id}`);
    await poll(() => page.locator('h1').innerText()).toBe('Website refresh');
    await poll(() => page.locator('.progress-text').innerText()).toBe('0 of 7 done');
    expect(await page.locator('.due').innerText()).toContain('December 15, 2026');
    expect(await card(page, 'logo').locator('.rules').innerText()).toContain('PNG or SVG');
    await shot(page, '01-opened');
    await expectAccessible(page);

    // Long text: the counter follows typing, autosave stores it; an unsaved copy survives a reload.
    const about = card(page, 'about').locator('textarea:not([name="body"])');
    await about.fill('We build wooden boats in Bergen.');
    await poll(() => card(page, 'about').locator('.counter').innerText()).toBe('32 of 300 characters');
    await poll(async () => (await itemRow(id, 'about')).value_json).toBe(
      JSON.stringify('We build wooden boats in Bergen.'),
    );
    await page.route('**/portal/api/*/items/about', (route) => route.abort('internetdisconnected'));
    await about.fill('We build wooden boats in Bergen, since 1921.');
    await poll(() => card(page, 'about').locator('.save-state').innerText(), 10_000).toContain('this device');
    await page.unroute('**/portal/api/*/items/about');
    await page.reload();
    await poll(() => card(page, 'about').locator('textarea:not([name="body"])').inputValue()).toBe(
      'We build wooden boats in Bergen, since 1921.',
    );
    await poll(async () => (await itemRow(id, 'about')).value_json, 10_000).toBe(
      JSON.stringify('We build wooden boats in Bergen, since 1921.'),
    );

    // Structured: required fields and bounds are checked next to each field before sending.
    const brand = card(page, 'brand');
    await brand.getByRole('button', { name: 'Submit' }).click();
    await poll(() => brand.locator('[data-field="company"] .field-error').innerText()).toBe(
      'Please fill this in.',
    );
    await brand.getByLabel('Company name').fill('Nordboat');
    await brand.getByLabel('Year founded').fill('1700');
    await brand.getByRole('button', { name: 'Submit' }).click();
    await poll(() => brand.locator('[data-field="founded"] .field-error').innerText()).toBe(
      'Must be at least 1800.',
    );
    await shot(page, '02-field-errors');
    await brand.getByLabel('Year founded').fill('1921');
    await brand.getByRole('button', { name: 'Submit' }).click();
    await poll(() => card(page, 'brand').getAttribute('data-status')).toBe('submitted');
    expect(JSON.parse((await itemRow(id, 'brand')).value_json ?? 'null')).toEqual({
      company: 'Nordboat',
      founded: 1921,
    });

    // Logo: the browser refuses what it can judge; the server judges the rest (content, not name).
    const logoInput = card(page, 'logo').locator('input.file-input').first();
    await writeFile(join(work, 'small.png'), await png(100, 100, true));
    await logoInput.setInputFiles(join(work, 'small.png'));
    await poll(() => card(page, 'logo').locator('.upload.failed').first().innerText()).toContain(
      'is 100 px wide; at least 400 px',
    );
    // An SVG by name only: the browser cannot tell, the server reads the content.
    await writeFile(join(work, 'disguised.svg'), 'just some text, not a drawing');
    await logoInput.setInputFiles(join(work, 'disguised.svg'));
    await poll(() => card(page, 'logo').locator('.upload.failed').nth(1).innerText()).toContain(
      'This file type is not accepted here: please use PNG or SVG.',
    );
    await shot(page, '03-constraint-errors');
    await writeFile(join(work, 'logo.png'), await png(800, 400, true));
    await logoInput.setInputFiles(join(work, 'logo.png'));
    await poll(() => card(page, 'logo').locator('.files .file').count()).toBe(1);
    expect(await card(page, 'logo').locator('.files img.thumb').getAttribute('src')).toContain('/thumbnail');
    // The good file settles the earlier refusals: their messages go.
    expect(await card(page, 'logo').locator('.upload.failed').count()).toBe(0);

    // Photos: two at once, each with its own progress bar; one removed again before submitting.
    await writeFile(join(work, 'one.jpg'), await jpeg(900));
    await writeFile(join(work, 'two.jpg'), await jpeg(700));
    await writeFile(join(work, 'three.jpg'), await jpeg(500));
    const photos = card(page, 'photos');
    await photos
      .locator('input.file-input')
      .first()
      .setInputFiles([join(work, 'one.jpg'), join(work, 'two.jpg'), join(work, 'three.jpg')]);
    await poll(() => card(page, 'photos').locator('.files .file').count(), 15_000).toBe(3);
    await card(page, 'photos')
      .locator('.files .file')
      .nth(2)
      .getByRole('button', { name: /Remove/ })
      .click();
    await poll(() => card(page, 'photos').locator('.files .file').count()).toBe(2);
    await shot(page, '04-uploads');

    // A large file: interrupted midway, resumed after a reload from where it stopped.
    const big = randomBytes(20 * 1024 * 1024);
    await writeFile(join(work, 'welcome.mp4'), big);
    const tusRequests: { method: string; offset: string | null }[] = [];
    page.on('request', (request) => {
      if (request.url().includes('/items/video/tus')) {
        tusRequests.push({ method: request.method(), offset: request.headers()['upload-offset'] ?? null });
      }
    });
    // Every PATCH after the first is cut until the page has reloaded: the client's own retries (after
    // 0 s, 1 s, 3 s…) must not reach the server between the cut and the reload.
    let patches = 0;
    let cutting = true;
    await page.route('**/items/video/tus/*', async (route) => {
      if (route.request().method() === 'PATCH' && ++patches > 1 && cutting)
        return route.abort('connectionreset');
      return route.continue();
    });
    await card(page, 'video').locator('input.file-input').first().setInputFiles(join(work, 'welcome.mp4'));
    await poll(() => patches, 20_000).toBeGreaterThan(1);
    await poll(() => card(page, 'video').locator('.upload progress').getAttribute('value')).not.toBe('0');
    await shot(page, '05-upload-interrupted');
    await page.reload();
    cutting = false;
    await poll(() => card(page, 'video').locator('.resume-note').innerText()).toMatch(/stopped at \d+%/);
    await shot(page, '06-resume-offered');
    const beforeResume = tusRequests.length;
    await card(page, 'video').locator('input.file-input').first().setInputFiles(join(work, 'welcome.mp4'));
    await poll(() => card(page, 'video').locator('.files .file').count(), 30_000).toBe(1);
    const afterReload = tusRequests.slice(beforeResume);
    expect(tusRequests.filter((r) => r.method === 'POST')).toHaveLength(1);
    expect(Number(afterReload.find((r) => r.method === 'PATCH')?.offset)).toBeGreaterThan(0);
    const stored = await filesOf(id, 'video');
    expect(stored).toHaveLength(1);
    expect(stored[0]).toMatchObject({
      name: 'welcome.mp4',
      sha256: createHash('sha256').update(big).digest('hex'),
    });
    expect(Number(stored[0]?.size)).toBe(big.length);

    // Secret: saved, then never shown back.
    const secret = card(page, 'wp_password').locator('input[type="password"]');
    await secret.fill('correct horse battery staple');
    await secret.blur();
    await poll(async () => (await itemRow(id, 'wp_password')).secret_ciphertext).not.toBeNull();

    // Submit everything that is left; the last required item brings the "all done" state.
    for (const key of ['logo', 'photos', 'video', 'about', 'wp_password']) {
      await card(page, key).getByRole('button', { name: 'Submit' }).click();
      await poll(() => card(page, key).getAttribute('data-status'), 10_000).toBe('submitted');
    }
    await poll(() => page.locator('#all-done .banner-title').innerText()).toBe('All done. Thank you!');
    await poll(() => page.locator('.progress-text').innerText()).toBe('6 of 7 done: the rest is optional');
    await shot(page, '07-all-done');

    // A reload shows the saved state; the secret is not in the page.
    await page.reload();
    // Sent, and still the client's to change until it is reviewed.
    expect(await card(page, 'about').locator('textarea:not([name="body"])').inputValue()).toBe(
      'We build wooden boats in Bergen, since 1921.',
    );
    expect(await card(page, 'logo').locator('.badge').innerText()).toContain('Sent for review');
    expect(await card(page, 'photos').locator('.files .file').count()).toBe(2);
    expect(await page.content()).not.toContain('correct horse');
    expect(await page.locator('#all-done').count()).toBe(1);
    await expectAccessible(page);

    // The caller asks for a change and accepts another item: the page says so.
    await api.post(`/v1/intakes/${id}/revision`, {
      item_key: 'about',
      note: 'Please add what makes your boats special.',
    });
    await api.post(`/v1/intakes/${id}/items/brand/approve`);
    await page.reload();
    expect(await card(page, 'about').getAttribute('data-status')).toBe('needs_revision');
    expect(await card(page, 'about').locator('.revision-note').innerText()).toBe(
      'Please add what makes your boats special.',
    );
    expect(await card(page, 'brand').locator('.badge').innerText()).toContain('Accepted');
    expect(await page.locator('.banner-warn .banner-title').innerText()).toBe('One item needs changes');
    await shot(page, '08-revision-requested');
    await expectAccessible(page);
    await context.close();
  }, 180_000);

  it('speaks German, formats for Germany and passes the accessibility check', async () => {
    const id = await createIntake(
      'de-DE',
      ITEMS.filter((i) => i.key !== 'video'),
    );
    // A German client's browser asks for German (the browser's preference comes before the sender's).
    const { context, page } = await phone('de-DE');
    await page.goto(`${server.url}/portal/${id}`);
    expect(await page.locator('html').getAttribute('lang')).toBe('de');
    await poll(() => page.locator('.progress-text').innerText()).toBe('0 von 6 erledigt');
    expect(await page.locator('.due').innerText()).toContain('15. Dezember 2026');
    expect(await card(page, 'logo').locator('.rules').innerText()).toContain('mindestens 400 px breit');
    await card(page, 'about').locator('textarea:not([name="body"])').fill('Wir bauen Holzboote.');
    await poll(() => card(page, 'about').locator('.counter').innerText()).toBe('20 von 300 Zeichen');
    await card(page, 'about').getByRole('button', { name: 'Absenden' }).click();
    await poll(() => card(page, 'about').locator('.badge').innerText()).toContain('Zur Prüfung gesendet');
    await writeFile(join(work, 'klein.png'), await png(100, 100, true));
    await card(page, 'logo').locator('input.file-input').first().setInputFiles(join(work, 'klein.png'));
    await poll(() => card(page, 'logo').locator('.upload.failed').innerText()).toContain(
      'mindestens 400 px sind nötig',
    );
    await shot(page, '09-german');
    await expectAccessible(page);
    await context.close();
  }, 60_000);

  it('shows an archived intake read-only with 410, and an unknown link as 404', async () => {
    const id = await createIntake('en', ITEMS.slice(3, 4));
    await api.post(`/v1/intakes/${id}/archive`);
    const { context, page } = await phone();
    const archived = await page.goto(`${server.url}/portal/${id}`);
    expect(archived?.status()).toBe(410);
    expect(await page.locator('.banner-closed .banner-title').innerText()).toBe('This request is closed');
    expect(await page.locator('textarea, input, button').count()).toBe(0);
    await shot(page, '10-archived');
    await expectAccessible(page);
    const unknown = await page.goto(`${server.url}/portal/in_${'x'.repeat(22)}`);
    expect(unknown?.status()).toBe(404);
    expect(await page.locator('h1').innerText()).toBe('This link does not work');
    await context.close();
  });
});
