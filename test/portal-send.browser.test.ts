import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
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
import { png } from './helpers/images.js';
import { startTestServer, type TestServer } from './helpers/server.js';

/**
 * The page's one send in chromium: answers saved as the client goes are marked "saved, not sent yet",
 * one primary action sends them all (what is still being typed included), leaving with unsent answers
 * warns, a sent answer stays changeable until it is accepted, and the send works without script.
 */
const available = chromiumAvailable('portal send browser tests');

const ITEMS = [
  { key: 'about', label: 'About your company', type: 'longtext', constraints: { max_chars: 300 } },
  { key: 'logo', label: 'Your logo', type: 'image', constraints: { formats: ['png'] } },
  { key: 'contract', label: 'Signed contract', type: 'file', required: false },
  { key: 'note', label: 'Anything else?', type: 'text', required: false },
  { key: 'website', label: 'Current website', type: 'url', required: false },
];

describe.skipIf(!available)('the portal page sends everything at once', () => {
  let server: TestServer;
  let api: Client;
  let browser: Browser;
  let work: string;

  beforeAll(async () => {
    await mkdir(ARTIFACTS, { recursive: true });
    work = await mkdtemp(join(tmpdir(), 'portal-send-'));
    server = await startTestServer('sqlite');
    const account = await server.createAccount({ plan: 'agency' });
    api = client(server.url, account.live_key);
    await api.patch('/v1/account', { name: 'Fjord Studio' });
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await server?.stop();
    if (work) await rm(work, { recursive: true, force: true });
  });

  async function createIntake(): Promise<string> {
    const created = await api.post<{ intake_id: string }>('/v1/intakes', {
      project_name: 'Bakery website',
      client: { email: 'dana@example.com', name: 'Dana' },
      items: ITEMS,
    });
    expect(created.status).toBe(201);
    return created.body.intake_id;
  }

  const statusOf = async (id: string, key: string) =>
    (
      await server.server.services.db.kysely
        .selectFrom('intake_items')
        .select('status')
        .where('intake_id', '=', id)
        .where('key', '=', key)
        .executeTakeFirstOrThrow()
    ).status;

  async function open(width: number, javaScriptEnabled = true) {
    const context = await browser.newContext({
      viewport: { width, height: width < 500 ? 780 : 900 },
      deviceScaleFactor: width < 500 ? 2 : 1,
      javaScriptEnabled,
    });
    const page = await context.newPage();
    page.on('pageerror', (error) => {
      throw error;
    });
    return { context, page };
  }

  const card = (page: Page, key: string) => page.locator(`#item-${key}`);
  const poll = <T>(read: () => T | Promise<T>, timeout = 10_000) => expect.poll(read, { timeout });
  const shot = (page: Page, name: string) =>
    page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });

  it('marks saved answers unsent, sends them all with one action, warns on leaving, allows changes', async () => {
    const id = await createIntake();
    const { context, page } = await open(360);
    const dialogs: string[] = [];
    page.on('dialog', (dialog) => {
      dialogs.push(dialog.type());
      void dialog.accept();
    });
    await page.goto(`${server.url}/portal/${id}`);
    await poll(() => page.locator('h1').innerText()).toBe('Bakery website');
    expect(await page.locator('#send').isHidden()).toBe(true);

    // Autosaved and uploaded answers are "saved, not sent yet", and counted in the send bar.
    await card(page, 'about')
      .locator('textarea:not([name="body"])')
      .fill('We bake bread in Berlin since 1921.');
    await poll(() => card(page, 'about').locator('.badge').innerText()).toBe('Saved, not sent yet');
    await writeFile(join(work, 'contract.png'), await png(120, 80));
    await card(page, 'contract')
      .locator('input.file-input')
      .first()
      .setInputFiles(join(work, 'contract.png'));
    await poll(() => card(page, 'contract').locator('.badge').innerText()).toBe('Saved, not sent yet');
    await poll(() => page.locator('#send .send-text').innerText()).toBe(
      '2 answers are saved but not sent yet.',
    );
    expect(await page.locator('#all-done').count()).toBe(0);
    await shot(page, 'send-01-unsent-360');
    await page.screenshot({ path: join(ARTIFACTS, 'send-01-unsent-360-viewport.png') });
    expect(await seriousAccessibilityProblems(page, ['best-practice'])).toEqual([]);

    // Leaving now would lose nothing on the server, but the agency would not have it: the page asks.
    await page.reload();
    expect(dialogs).toEqual(['beforeunload']);
    await poll(() => page.locator('#send .send-text').innerText()).toBe(
      '2 answers are saved but not sent yet.',
    );

    // A note still being typed goes with the one send.
    await card(page, 'note').locator('input').fill('Please keep the old opening hours.');
    await page
      .locator('#send')
      .getByRole('button', { name: /^Send \d answers?$/ })
      .click();
    await poll(() => page.locator('#sent .banner-title').innerText()).toBe('3 answers sent. Thank you!');
    for (const key of ['about', 'contract', 'note']) expect(await statusOf(id, key)).toBe('submitted');
    expect(await statusOf(id, 'logo')).toBe('pending');
    expect(await page.locator('#send').isHidden()).toBe(true);
    expect(await card(page, 'about').locator('.badge').innerText()).toBe('Sent for review');
    await shot(page, 'send-02-sent-360');

    // A sent answer can still be changed until it is reviewed; the change is sent again.
    await card(page, 'about')
      .locator('textarea:not([name="body"])')
      .fill('We bake bread and cakes in Berlin since 1921.');
    await poll(() => page.locator('#send .send-text').innerText()).toBe(
      '1 answer is saved but not sent yet.',
    );
    await page.locator('#send').getByRole('button', { name: 'Send 1 answer' }).click();
    await poll(() => page.locator('#sent .banner-title').innerText()).toBe('1 answer sent. Thank you!');
    const history = await api.get<{ items: { key: string; history: { action: string }[] }[] }>(
      `/v1/intakes/${id}`,
    );
    expect(history.body.items.find((i) => i.key === 'about')?.history.map((h) => h.action)).toEqual([
      'submitted',
      'submitted',
    ]);

    // Accepted: the page says so and offers no change.
    await api.post(`/v1/intakes/${id}/items/about/approve`);
    dialogs.length = 0;
    await page.reload();
    expect(dialogs).toEqual([]);
    expect(await card(page, 'about').locator('.badge').innerText()).toBe('Accepted');
    expect(await card(page, 'about').locator('textarea:not([name="body"])').count()).toBe(0);
    expect(await card(page, 'about').innerText()).toContain('Accepted: nothing more to do here.');
    await context.close();

    const wide = await open(1280);
    await wide.page.goto(`${server.url}/portal/${id}`);
    await card(wide.page, 'website').locator('input').fill('https://example.com');
    await card(wide.page, 'website').locator('input').blur();
    await poll(() => wide.page.locator('#send .send-text').innerText()).toBe(
      '1 answer is saved but not sent yet.',
    );
    await shot(wide.page, 'send-03-unsent-1280');
    await wide.page.screenshot({ path: join(ARTIFACTS, 'send-03-unsent-1280-viewport.png') });
    await wide.context.close();
  }, 90_000);

  it('sends without script: a saved draft, then the one send as a plain form', async () => {
    const id = await createIntake();
    const { context, page } = await open(360, false);
    await page.goto(`${server.url}/portal/${id}`);
    await card(page, 'about').locator('textarea:not([name="body"])').fill('We bake bread.');
    await card(page, 'about').getByRole('button', { name: 'Save draft' }).click();
    await poll(() => page.locator('#send .send-text').innerText()).toBe(
      '1 answer is saved but not sent yet.',
    );
    await page.locator('#send').getByRole('button', { name: 'Send 1 answer' }).click();
    await poll(() => page.locator('#sent .banner-title').innerText()).toBe('1 answer sent. Thank you!');
    expect(await statusOf(id, 'about')).toBe('submitted');
    await shot(page, 'send-04-nojs-sent-360');
    await context.close();
  }, 60_000);
});
