import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Browser, type ConsoleMessage, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { optOutSignature } from '../src/modules/chases/chases.service.js';
import {
  ARTIFACTS,
  chromiumAvailable,
  launchChromium,
  seriousAccessibilityProblems,
} from './helpers/browser.js';
import { client, type Client } from './helpers/http.js';
import { png } from './helpers/images.js';
import { startTestServer, type TestServer } from './helpers/server.js';

/**
 * A client finishes a request of every item type in one pass, on a phone (360 px) and a desktop
 * (1280 px): picks their language, types as people type (a bare domain, a local phone number),
 * uploads and replaces a file, leaves and comes back with nothing lost, sends everything with one
 * action, changes an answer before review, gets one item back for a change and sends it again.
 * Throughout: no console errors, nothing wider than the screen, no serious or critical axe-core
 * findings; the opt-out and error pages too.
 */
const available = chromiumAvailable('portal journey browser tests');

const OPTIONS = [
  { value: 'both', label: 'Both shops' },
  { value: 'city', label: 'City shop only' },
];
const ITEMS = [
  { key: 'company', label: 'Company name', type: 'text', example: 'Bäckerei Müller GmbH' },
  { key: 'about', label: 'About your bakery', type: 'longtext', constraints: { max_chars: 500 } },
  { key: 'website', label: 'Current website', type: 'url' },
  { key: 'billing_email', label: 'Billing email', type: 'email' },
  { key: 'phone', label: 'Phone for customers', type: 'phone' },
  { key: 'opening', label: 'Opening day of the new shop', type: 'date' },
  { key: 'staff', label: 'How many people work there?', type: 'number', constraints: { integer: true } },
  { key: 'delivery', label: 'Do you deliver?', type: 'boolean' },
  { key: 'shops', label: 'Which shops go on the site?', type: 'select', options: OPTIONS },
  {
    key: 'channels',
    label: 'Where do you advertise?',
    type: 'multiselect',
    options: [
      { value: 'print', label: 'Print' },
      { value: 'social', label: 'Social media' },
      { value: 'radio', label: 'Radio' },
    ],
  },
  { key: 'palette', label: 'Brand colours', type: 'color_list', constraints: { min_count: 1 } },
  {
    key: 'facts',
    label: 'Company facts',
    type: 'structured',
    schema: {
      type: 'object',
      required: ['legal_name'],
      properties: {
        legal_name: { type: 'string', title: 'Registered name' },
        founded: { type: 'integer', title: 'Founded in' },
      },
    },
  },
  { key: 'wifi', label: 'Shop wifi password', type: 'secret', required: false },
  { key: 'logo', label: 'Logo', type: 'image', constraints: { formats: ['png'] } },
  { key: 'contract', label: 'Signed contract', type: 'file', required: false },
  {
    key: 'photos',
    label: 'Photos of the shop',
    type: 'file_list',
    required: false,
    constraints: { max_count: 3 },
  },
];

describe.skipIf(!available)('a client finishes a request in one pass', () => {
  let server: TestServer;
  let api: Client;
  let browser: Browser;
  let work: string;

  beforeAll(async () => {
    await mkdir(ARTIFACTS, { recursive: true });
    work = await mkdtemp(join(tmpdir(), 'portal-journey-'));
    server = await startTestServer('sqlite');
    const account = await server.createAccount({ plan: 'agency' });
    api = client(server.url, account.live_key);
    await api.patch('/v1/account', { name: 'Fjord Studio', branding: { accent_color: '#0f766e' } });
    browser = await launchChromium();
    await writeFile(join(work, 'logo-old.png'), await png(320, 120));
    await writeFile(join(work, 'logo-new.png'), await png(400, 150));
    await writeFile(join(work, 'contract.pdf'), '%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n');
    await writeFile(join(work, 'shop-1.png'), await png(200, 150));
    await writeFile(join(work, 'shop-2.png'), await png(210, 150));
  });
  afterAll(async () => {
    await browser?.close();
    await server?.stop();
    if (work) await rm(work, { recursive: true, force: true });
  });

  const row = async (id: string, key: string) => {
    const found = await server.server.services.db.kysely
      .selectFrom('intake_items')
      .select(['status', 'value_json', 'secret_ciphertext'])
      .where('intake_id', '=', id)
      .where('key', '=', key)
      .executeTakeFirstOrThrow();
    return {
      status: found.status,
      value: found.value_json === null ? null : (JSON.parse(found.value_json) as unknown),
      secret: found.secret_ciphertext !== null,
    };
  };
  const filesOf = (id: string, key: string) =>
    server.server.services.db.kysely
      .selectFrom('item_files')
      .select(['name'])
      .where('intake_id', '=', id)
      .where('item_key', '=', key)
      .execute()
      .then((rows) => rows.map((r) => r.name).sort());
  const poll = <T>(read: () => T | Promise<T>, timeout = 15_000) => expect.poll(read, { timeout });

  /** A page that records what the browser complains about; its own 4xx status is not a complaint. */
  async function open(width: number) {
    const context = await browser.newContext({
      viewport: { width, height: width < 500 ? 780 : 900 },
      deviceScaleFactor: width < 500 ? 2 : 1,
      hasTouch: width < 500,
      locale: 'en-US',
    });
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`));
    page.on('console', (message: ConsoleMessage) => {
      if (message.type() !== 'error') return;
      const ownStatus =
        message.location().url === page.url() &&
        /^Failed to load resource: the server responded with a status of (404|410)/.test(message.text());
      if (!ownStatus) problems.push(`console: ${message.text()} (${message.location().url})`);
    });
    page.on('dialog', (dialog) => void dialog.accept());
    return { context, page, problems };
  }

  async function check(page: Page, width: number, name: string) {
    expect(await page.evaluate<number>('document.documentElement.scrollWidth'), name).toBeLessThanOrEqual(
      width,
    );
    expect(await seriousAccessibilityProblems(page, ['best-practice']), name).toEqual([]);
    await page.screenshot({ path: join(ARTIFACTS, `journey-${name}-${width}.png`), fullPage: true });
  }

  for (const width of [360, 1280]) {
    it(`every item type at ${width} px: one send, a change asked for, sent again`, async () => {
      const created = await api.post<{ intake_id: string }>('/v1/intakes', {
        project_name: 'Bakery website',
        client: { email: 'dana@example.com', name: 'Dana', language: 'en', country: 'DE' },
        due_date: '2027-03-01',
        items: ITEMS,
      });
      expect(created.status).toBe(201);
      const id = created.body.intake_id;
      const { context, page, problems } = await open(width);
      const card = (key: string) => page.locator(`#item-${key}`);
      await page.goto(`${server.url}/portal/${id}`);
      await poll(() => page.locator('.progress-text').innerText()).toBe('0 of 16 done');
      await check(page, width, '01-opened');

      // The language switcher: plain links; the choice holds across reloads, and back again.
      await page.locator('.languages summary').click();
      await page.getByRole('link', { name: 'Deutsch' }).click();
      await poll(() => page.locator('.greeting').innerText()).toContain('Hallo Dana');
      await page.reload();
      expect(await page.locator('html').getAttribute('lang')).toBe('de');
      await check(page, width, '02-deutsch');
      await page.locator('.languages summary').click();
      await page.getByRole('link', { name: 'English' }).click();
      await poll(() => page.locator('.greeting').innerText()).toContain('Hello Dana');

      // A long line without spaces (a pasted link, JSON) wraps inside its card: the page never
      // scrolls sideways, on a phone either.
      await card('about')
        .locator('textarea:not([name="body"])')
        .fill(`https://example.com/${'a'.repeat(400)}`);
      await check(page, width, '02-long-line');

      // Typed as people type: a bare domain, a local number, a year without a thousands separator.
      await card('company').locator('input').fill('Bäckerei Müller');
      await card('about').locator('textarea:not([name="body"])').fill('Family bakery in Berlin since 1921.');
      await card('website').locator('input').fill('baeckerei-mueller.de');
      await card('billing_email').locator('input').fill('billing@baeckerei-mueller.de');
      await card('phone').locator('input').fill('030 1234567');
      await card('opening').locator('input').fill('2027-04-01');
      await card('staff').locator('input').fill('12');
      await card('delivery').getByLabel('Yes').check();
      await card('shops').getByLabel('Both shops').check();
      await card('channels').getByLabel('Print').check();
      await card('channels').getByLabel('Radio').check();
      await card('palette').locator('input[type="text"]').first().fill('#b5651d');
      await card('facts').getByLabel('Registered name').fill('Bäckerei Müller GmbH');
      await card('facts').getByLabel('Founded in').fill('1921');
      await card('wifi').locator('input[type="password"]').fill('croissant-2027');
      await card('wifi').locator('input[type="password"]').blur();

      const fileInput = (key: string) => card(key).locator('input.file-input[name="file"]');
      await fileInput('logo').setInputFiles(join(work, 'logo-old.png'));
      await poll(() => filesOf(id, 'logo')).toEqual(['logo-old.png']);
      await fileInput('contract').setInputFiles(join(work, 'contract.pdf'));
      await fileInput('photos').setInputFiles([join(work, 'shop-1.png'), join(work, 'shop-2.png')]);
      await poll(() => filesOf(id, 'photos')).toEqual(['shop-1.png', 'shop-2.png']);
      await poll(() => filesOf(id, 'contract')).toEqual(['contract.pdf']);
      // Another logo replaces the first in one step.
      await poll(() => card('logo').locator('.drop-main').innerText()).toBe(
        'Choose another file to replace it',
      );
      await fileInput('logo').setInputFiles(join(work, 'logo-new.png'));
      await poll(() => filesOf(id, 'logo')).toEqual(['logo-new.png']);
      await poll(() => card('logo').locator('.files .file-name').allInnerTexts()).toEqual(['logo-new.png']);
      expect(await card('logo').locator('.upload.failed').count()).toBe(0);

      await poll(() => page.locator('#send .send-text').innerText()).toBe(
        '16 answers are saved but not sent yet.',
      );
      await check(page, width, '03-filled');

      // Leave and come back: everything is there, on the server, still waiting to be sent.
      await page.goto('about:blank');
      await page.goto(`${server.url}/portal/${id}`);
      expect(await card('company').locator('input').inputValue()).toBe('Bäckerei Müller');
      expect(await card('about').locator('textarea:not([name="body"])').inputValue()).toBe(
        'Family bakery in Berlin since 1921.',
      );
      expect(await card('website').locator('input').inputValue()).toBe('https://baeckerei-mueller.de');
      expect(await card('phone').locator('input').inputValue()).toBe('030 1234567');
      expect(await card('delivery').getByLabel('Yes').isChecked()).toBe(true);
      expect(await card('channels').getByLabel('Radio').isChecked()).toBe(true);
      expect(await card('facts').getByLabel('Founded in').inputValue()).toBe('1921');
      expect(await card('wifi').innerText()).toContain('A value is saved.');
      expect(await card('photos').locator('.files .file').count()).toBe(2);
      expect(await page.locator('#send .send-text').innerText()).toBe(
        '16 answers are saved but not sent yet.',
      );

      // One send: every answer goes, nothing is left unsent.
      await page.locator('#send').getByRole('button', { name: 'Send 16 answers' }).click();
      await poll(() => page.locator('#sent .banner-title').innerText()).toBe('16 answers sent. Thank you!');
      for (const { key } of ITEMS) expect((await row(id, key)).status, key).toBe('submitted');
      expect(await page.locator('#send').isHidden()).toBe(true);
      expect(await page.locator('.badge-unsent').count()).toBe(0);
      expect(await row(id, 'website')).toMatchObject({ value: 'https://baeckerei-mueller.de' });
      expect(await row(id, 'phone')).toMatchObject({ value: '+49301234567' });
      expect(await row(id, 'staff')).toMatchObject({ value: 12 });
      expect(await row(id, 'facts')).toMatchObject({
        value: { legal_name: 'Bäckerei Müller GmbH', founded: 1921 },
      });
      expect((await row(id, 'wifi')).secret).toBe(true);
      await check(page, width, '04-sent');

      // A change before anyone reviewed it: still the client's to make, and sent again.
      await card('staff').locator('input').fill('14');
      await card('staff').locator('input').blur();
      await poll(() => page.locator('#send .send-text').innerText()).toBe(
        '1 answer is saved but not sent yet.',
      );
      await page.locator('#send').getByRole('button', { name: 'Send 1 answer' }).click();
      await poll(() => page.locator('#sent .banner-title').innerText()).toBe('1 answer sent. Thank you!');
      expect(await row(id, 'staff')).toMatchObject({ status: 'submitted', value: 14 });

      // The agency asks for one change; the client sees why, changes it and sends it again.
      const revision = await api.post(`/v1/intakes/${id}/revision`, {
        item_key: 'about',
        note: 'Please add what makes your bread different.',
      });
      expect(revision.status).toBe(200);
      await page.reload();
      await poll(() => card('about').locator('.revision-note').innerText()).toBe(
        'Please add what makes your bread different.',
      );
      expect(await page.locator('.banner-warn .banner-title').innerText()).toBe('One item needs changes');
      await check(page, width, '05-revision');
      await card('about')
        .locator('textarea:not([name="body"])')
        .fill('Family bakery in Berlin since 1921. Sourdough, 48 hours.');
      await poll(() => page.locator('#send .send-text').innerText()).toBe(
        '1 answer is saved but not sent yet.',
      );
      await page.locator('#send').getByRole('button', { name: 'Send 1 answer' }).click();
      await poll(() => page.locator('#sent .banner-title').innerText()).toBe('1 answer sent. Thank you!');
      expect(await row(id, 'about')).toEqual({
        status: 'submitted',
        value: 'Family bakery in Berlin since 1921. Sourdough, 48 hours.',
        secret: false,
      });
      expect(await page.locator('.badge-unsent').count()).toBe(0);
      await poll(() => page.locator('.progress-text').innerText()).toBe('16 of 16 done');
      await check(page, width, '06-resent');

      // The opt-out page and a broken link: the portal's look, the same checks.
      await page.goto(`${server.url}/optout/${id}?sig=${optOutSignature(server.server.services, id, null)}`);
      expect(await page.locator('h1').innerText()).toBe('Stop reminders about “Bakery website”?');
      await check(page, width, '07-optout');
      await page.getByRole('button', { name: 'Stop reminders' }).click();
      await poll(() => page.locator('h1').innerText()).toBe('Reminders stopped');
      await check(page, width, '08-optout-done');
      const broken = await page.goto(`${server.url}/portal/in_${'Q'.repeat(22)}`);
      expect(broken?.status()).toBe(404);
      await check(page, width, '09-not-found');
      const badSignature = await page.goto(`${server.url}/optout/${id}?sig=0000`);
      expect(badSignature?.status()).toBe(404);
      await check(page, width, '10-optout-invalid');

      expect(problems).toEqual([]);
      await context.close();
    }, 180_000);
  }
});
