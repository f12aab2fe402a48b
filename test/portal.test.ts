import { gzipSync } from 'node:zlib';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PORTAL_LIMITS } from '../src/modules/portal/portal.security.js';
import { DATABASES } from './helpers/env.js';
import { client, type Client } from './helpers/http.js';
import { png } from './helpers/images.js';
import { expectError } from './helpers/security.js';
import { startTestServer, type TestServer } from './helpers/server.js';

/** The portal page over plain HTTP: rendering, headers, languages, and every action as a no-script form. */
const ITEMS = [
  {
    key: 'logo',
    label: 'Your <b>logo</b>',
    type: 'image',
    constraints: { formats: ['png'], min_width: 200 },
  },
  {
    key: 'about',
    label: 'About you',
    type: 'longtext',
    help: 'A few lines.',
    constraints: { max_chars: 50 },
  },
  {
    key: 'brand',
    label: 'Brand facts',
    type: 'structured',
    schema: {
      type: 'object',
      required: ['company', 'founded'],
      properties: { company: { type: 'string' }, founded: { type: 'integer', minimum: 1800 } },
    },
  },
  { key: 'phone', label: 'Phone', type: 'phone', required: false },
];

const form = (fields: Record<string, string>) => ({
  rawBody: new URLSearchParams(fields).toString(),
  headers: { 'content-type': 'application/x-www-form-urlencoded' },
});

/** A browser's form post: the answer itself, redirects not followed. */
async function postForm(url: string, fields: Record<string, string>) {
  const response = await fetch(url, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields).toString(),
  });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

describe.each(DATABASES)('the portal page on %s', (database) => {
  let server: TestServer;
  let api: Client;
  let visitor: Client;
  let account: Awaited<ReturnType<TestServer['createAccount']>>;

  beforeAll(async () => {
    server = await startTestServer(database);
    account = await server.createAccount({ plan: 'agency' });
    api = client(server.url, account.live_key);
    visitor = client(server.url);
  });
  afterAll(async () => server.stop());

  async function intake(extra: Record<string, unknown> = {}): Promise<string> {
    const created = await api.post<{ intake_id: string }>('/v1/intakes', {
      project_name: 'Launch <script>alert(1)</script>',
      client: { email: 'c@example.com', name: 'Dana & Co' },
      due_date: '2026-12-15',
      items: ITEMS,
      ...extra,
    });
    expect(created.status).toBe(201);
    return created.body.intake_id;
  }

  const item = async (id: string, key: string) =>
    server.server.services.db.kysely
      .selectFrom('intake_items')
      .select(['status', 'value_json'])
      .where('intake_id', '=', id)
      .where('key', '=', key)
      .executeTakeFirstOrThrow();

  it('renders the intake on the server, escaped, with strict headers, and records the view', async () => {
    const id = await intake({ client_brief: 'Brief with <i>tags</i>' });
    const page = await visitor.get(`/portal/${id}`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toContain('text/html');
    const csp = page.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("default-src 'self'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("img-src 'self' blob: data:");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain('unsafe-inline');
    expect(page.headers.get('x-content-type-options')).toBe('nosniff');
    expect(page.headers.get('referrer-policy')).toBe('no-referrer');
    expect(page.headers.get('cache-control')).toBe('no-store');
    const html = page.text;
    expect(html).toContain('<html lang="en">');
    expect(html).toContain('Launch &lt;script&gt;alert(1)&lt;/script&gt;');
    expect(html).not.toContain('<script>alert(1)');
    expect(html).toContain('Your &lt;b&gt;logo&lt;/b&gt;');
    expect(html).toContain('Brief with &lt;i&gt;tags&lt;/i&gt;');
    expect(html).toContain('Hello Dana &amp; Co,');
    expect(html).toContain('December 15, 2026');
    expect(html).toContain('0 of 4 done');
    expect(html).toContain('at least 200 px wide');
    expect(html).toContain('up to 50 characters');
    // No inline script: only the bundle (same origin) and a JSON data block.
    expect(html.match(/<script[^>]*>/g)?.every((tag) => /type="(module|application\/json)"/.test(tag))).toBe(
      true,
    );
    expect(html).not.toMatch(/https?:\/\/(?!example\.com)/);
    const status = await api.get<{ client_last_seen: string | null }>(`/v1/intakes/${id}/status`);
    expect(status.body.client_last_seen).toEqual(expect.any(String));
    const events = await server.server.services.db.kysely
      .selectFrom('events')
      .select('type')
      .where('intake_id', '=', id)
      .execute();
    expect(events.map((e) => e.type)).toEqual(expect.arrayContaining(['intake.viewed', 'client.viewed']));
  });

  it('speaks the client language, with a fallback to English', async () => {
    const fr = await visitor.get(
      `/portal/${await intake({ client: { email: 'c@example.com', name: 'Zoé', language: 'fr-CA' } })}`,
    );
    expect(fr.text).toContain('<html lang="fr">');
    expect(fr.text).toContain('Bonjour Zoé,');
    expect(fr.text).toContain('15 décembre 2026');
    const nl = await visitor.get(
      `/portal/${await intake({ client: { email: 'c@example.com', language: 'nl' } })}`,
    );
    expect(nl.text).toContain('0 van 4 klaar');
    const ja = await visitor.get(
      `/portal/${await intake({ client: { email: 'c@example.com', language: 'ja' } })}`,
    );
    expect(ja.text).toContain('<html lang="en">');
  });

  it('lets the reader choose: ?lang= (kept for the visit), then Accept-Language, then the client language', async () => {
    const id = await intake({ client: { email: 'c@example.com', name: 'Zoé', language: 'fr' } });
    // The browser's preference beats the sender's guess; a language without a catalogue does not.
    const browser = await visitor.get(`/portal/${id}`, {
      headers: { 'accept-language': 'ja, nl-BE;q=0.8, fr;q=0.5' },
    });
    expect(browser.text).toContain('<html lang="nl">');
    expect(browser.headers.get('set-cookie')).toBeNull();
    expect((await visitor.get(`/portal/${id}`, { headers: { 'accept-language': 'ja' } })).text).toContain(
      '<html lang="fr">',
    );
    // The switcher: one plain link per language, in its own language, marked with hreflang.
    for (const [code, name] of [
      ['de', 'Deutsch'],
      ['en', 'English'],
      ['es', 'Español'],
      ['fr', 'Français'],
      ['nl', 'Nederlands'],
    ]) {
      expect(browser.text).toMatch(
        new RegExp(`<a\\s+href="\\?lang=${code}"\\s+hreflang="${code}"\\s+lang="${code}"[^>]*>${name}</a`),
      );
    }
    expect(browser.text).toMatch(/aria-current="true"\s*>Nederlands</);
    // A pick wins over everything and is kept for the visit (a session cookie for the portal's paths).
    const picked = await visitor.get(`/portal/${id}?lang=de`, { headers: { 'accept-language': 'nl' } });
    expect(picked.text).toContain('<html lang="de">');
    expect(picked.text).toContain('Hallo Zoé,');
    const cookie = picked.headers.get('set-cookie') ?? '';
    expect(cookie).toMatch(/^portal_lang=de; Path=\/portal; HttpOnly; SameSite=Lax/);
    expect(cookie).not.toMatch(/Max-Age|Expires/);
    const session = { cookie: cookie.split(';')[0] ?? '', 'accept-language': 'nl' };
    expect((await visitor.get(`/portal/${id}`, { headers: session })).text).toContain('<html lang="de">');
    // The page's own forms answer in the picked language too (here an error shown with the page).
    const saved = await visitor.post(`/portal/${id}/items/about`, undefined, {
      rawBody: new URLSearchParams({ value: 'x'.repeat(60), action: 'save' }).toString(),
      headers: { ...session, 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(saved.status).toBe(422);
    expect(saved.text).toContain('<html lang="de">');
    expect((await visitor.get(`/portal/${id}?lang=xx`)).headers.get('set-cookie')).toBeNull();
  });

  it('shows answers, sizes and limits as people write them, in the page language', async () => {
    const id = await intake({
      client: { email: 'c@example.com', name: 'Dana', country: 'DE' },
      items: [
        { key: 'logo', label: 'Logo', type: 'image' },
        { key: 'contract', label: 'Contract', type: 'file', constraints: { max_bytes: 5_000_000 } },
        { key: 'agree', label: 'Agree?', type: 'boolean' },
        {
          key: 'shops',
          label: 'Shops',
          type: 'select',
          options: [
            { value: 'both', label: 'Both shops' },
            { value: 'one', label: 'One shop' },
          ],
        },
        { key: 'phone', label: 'Phone', type: 'phone' },
        { key: 'start', label: 'Start', type: 'date' },
        {
          key: 'facts',
          label: 'Facts',
          type: 'structured',
          schema: {
            type: 'object',
            properties: {
              vat: { type: 'boolean', title: 'VAT registered' },
              founded: { type: 'integer', title: 'Founded' },
            },
          },
        },
        { key: 'note', label: 'Note', type: 'text', required: false },
      ],
    });
    const put = (key: string, value: unknown) =>
      visitor.call('PUT', `/portal/api/${id}/items/${key}`, { body: { value } });
    for (const [key, value] of [
      ['agree', true],
      ['shops', 'both'],
      ['phone', '030 1234567'],
      ['start', '2027-02-01'],
      ['facts', { vat: true, founded: 1921 }],
    ] as const)
      expect((await put(key, value)).status).toBe(200);
    const upload = await fetch(`${server.url}/portal/api/${id}/items/contract/files`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain', 'x-filename': 'note.txt' },
      body: 'x'.repeat(193),
    });
    expect(upload.status).toBe(201);
    const logo = await fetch(`${server.url}/portal/api/${id}/items/logo/files`, {
      method: 'POST',
      headers: { 'content-type': 'image/png', 'x-filename': 'logo.png' },
      body: new Uint8Array(await png(300, 100)),
    });
    expect(logo.status).toBe(201);
    expect((await visitor.post(`/portal/api/${id}/submit`, {})).status).toBe(200);
    const open = (await visitor.get(`/portal/${id}`)).text;
    // Sizes in decimal units and words; the item's own limit, not the plan's gigabytes on a logo.
    expect(open).toContain('193 bytes');
    expect(open).toContain('up to 5 MB per file');
    expect(open).not.toMatch(/up to [\d.,]+\s?GB/);
    // The phone field shows the number as its owner writes it, not in E.164.
    expect(open).toContain('value="030 1234567"');
    // "All done" is not set beside "7 of 8 done" without saying the rest is optional.
    expect(open).toContain('All done. Thank you!');
    expect(open).toContain('7 of 8 done: the rest is optional');
    // Closed: every answer read-only, as people write it (no true, both, E.164 or ISO date).
    await api.post(`/v1/intakes/${id}/archive`);
    const closed = (await visitor.get(`/portal/${id}`)).text;
    const shown = (key: string) =>
      new RegExp(`id="item-${key}"[\\s\\S]*?</section>`).exec(closed)?.[0].replace(/<[^>]+>|\s+/g, ' ') ?? '';
    expect(shown('agree')).toContain(' Yes ');
    expect(shown('shops')).toContain(' Both shops ');
    expect(shown('phone')).toContain(' 030 1234567 ');
    expect(shown('start')).toContain(' February 1, 2027 ');
    expect(shown('facts')).toMatch(/VAT registered +Yes +Founded +1921 /);
    expect(closed).not.toMatch(/>\s*(true|both|\+49301234567|2027-02-01)\s*</);
    // Nothing there asks for more: no due date, no rules to follow, no "can still change it".
    expect(closed).not.toContain('Please finish by');
    expect(closed).not.toContain('class="rules"');
    expect(closed).not.toContain('You can still change it');
    expect(closed).toMatch(/Hello Dana,\s+Here is what you sent to [^<]+\./);
    const german = (await visitor.get(`/portal/${id}?lang=de`)).text;
    expect(german).toContain('1. Februar 2027');
    expect(german).toContain('193 Byte');
  });

  it('answers 404 for unknown, draft and deleted intakes, 410 for archived ones', async () => {
    expect((await visitor.get(`/portal/in_${'Q'.repeat(22)}`)).status).toBe(404);
    expect((await visitor.get('/portal/not-an-id')).status).toBe(404);
    const draft = await intake({ send: false });
    expect((await visitor.get(`/portal/${draft}`)).status).toBe(404);
    const deleted = await intake();
    const removed = await api.delete(`/v1/intakes/${deleted}`);
    expect(removed.status, removed.text).toBe(204);
    const gone = await visitor.get(`/portal/${deleted}`);
    expect(gone.status).toBe(404);
    expect(gone.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    const archived = await intake();
    await api.post(`/v1/intakes/${archived}/archive`);
    const closed = await visitor.get(`/portal/${archived}`);
    expect(closed.status).toBe(410);
    expect(closed.text).toContain('This request is closed');
    expect(closed.text).not.toContain('<form');
    expect(
      (await postForm(`${server.url}/portal/${archived}/items/about`, { value: 'x', action: 'save' })).status,
    ).toBe(410);
  });

  it('works without a script: forms save, submit and show errors in place', async () => {
    const id = await intake();
    const saved = await postForm(`${server.url}/portal/${id}/items/about`, {
      value: 'Hello there',
      action: 'save',
    });
    expect(saved.status).toBe(303);
    expect(saved.headers.get('location')).toBe(`/portal/${id}?notice=saved&item=about#item-about`);
    expect((await item(id, 'about')).value_json).toBe('"Hello there"');
    const tooLong = await visitor.post(
      `/portal/${id}/items/about`,
      undefined,
      form({ value: 'x'.repeat(51), action: 'submit' }),
    );
    expect(tooLong.status).toBe(422);
    expect(tooLong.text).toContain('Too long: at most 50 characters.');
    expect(tooLong.text).toContain('x'.repeat(51));
    const submitted = await postForm(`${server.url}/portal/${id}/items/about`, {
      value: 'Hello there',
      action: 'submit',
    });
    expect(submitted.status).toBe(303);
    expect((await item(id, 'about')).status).toBe('submitted');
    const after = await visitor.get(`/portal/${id}?notice=submitted&item=about`);
    expect(after.text).toContain('Sent for review');
    expect(after.text).toContain('1 of 4 done');

    // Structured: each problem next to its field, then accepted.
    const bad = await postForm(`${server.url}/portal/${id}/items/brand`, {
      's.company': '',
      's.founded': '1700',
      action: 'submit',
    });
    expect(bad.status).toBe(422);
    expect(bad.text).toMatch(/id="item-brand-company-error"[^>]*>\s*Please fill this in\./);
    expect(bad.text).toMatch(/id="item-brand-founded-error"[^>]*>\s*Must be at least 1800\./);
    const good = await postForm(`${server.url}/portal/${id}/items/brand`, {
      's.company': 'Nord',
      's.founded': '1921',
      action: 'submit',
    });
    expect(good.status).toBe(303);
    expect(JSON.parse((await item(id, 'brand')).value_json ?? 'null')).toEqual({
      company: 'Nord',
      founded: 1921,
    });

    // Phone numbers as people type them.
    await visitor.post(
      `/portal/${id}/items/phone`,
      undefined,
      form({ value: '+44 (20) 7946-0958', action: 'save' }),
    );
    expect((await item(id, 'phone')).value_json).toBe('"+442079460958"');

    // The page script asks for JSON and gets the re-rendered card.
    const json = await visitor.post<{ ok: boolean; card: string; summary: string }>(
      `/portal/${id}/items/phone`,
      undefined,
      {
        ...form({ value: 'not a phone', action: 'submit' }),
        headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      },
    );
    expect(json.status).toBe(422);
    expect(json.body.ok).toBe(false);
    expect(json.body.card).toContain('Please enter a phone number with its country code');
  });

  it('uploads and removes files with plain multipart forms', async () => {
    const id = await intake();
    const body = new FormData();
    body.append('file', new Blob([new Uint8Array(await png(300, 100))], { type: 'image/png' }), 'logo.png');
    const uploaded = await fetch(`${server.url}/portal/${id}/items/logo/upload`, {
      method: 'POST',
      body,
      redirect: 'manual',
    });
    expect(uploaded.status).toBe(303);
    const view = await visitor.get<{ items: { key: string; files: { file_id: string }[] }[] }>(
      `/portal/api/${id}`,
    );
    const fileId = view.body.items.find((i) => i.key === 'logo')?.files[0]?.file_id ?? '';
    const thumb = await fetch(`${server.url}/portal/api/${id}/items/logo/files/${fileId}/thumbnail`);
    expect(thumb.status).toBe(200);
    expect(thumb.headers.get('content-type')).toBe('image/webp');
    expect(thumb.headers.get('content-disposition')).toContain('attachment');
    const small = new FormData();
    small.append('file', new Blob([new Uint8Array(await png(50, 50))], { type: 'image/png' }), 'small.png');
    const refused = await fetch(`${server.url}/portal/${id}/items/logo/upload`, {
      method: 'POST',
      body: small,
      redirect: 'manual',
    });
    // A one-file item: another file replaces the one it holds, but only a file that passes its checks.
    expect(refused.status).toBe(422);
    expect(await refused.text()).toContain('This image is too small: it must be at least 200 px wide.');
    const logoFiles = async () =>
      (
        await visitor.get<{ items: { key: string; files: { file_id: string; name: string }[] }[] }>(
          `/portal/api/${id}`,
        )
      ).body.items.find((i) => i.key === 'logo')?.files ?? [];
    expect((await logoFiles()).map((f) => f.file_id)).toEqual([fileId]);
    const better = new FormData();
    better.append('file', new Blob([new Uint8Array(await png(400, 100))], { type: 'image/png' }), 'new.png');
    const replaced = await fetch(`${server.url}/portal/${id}/items/logo/upload`, {
      method: 'POST',
      body: better,
      redirect: 'manual',
    });
    expect(replaced.status).toBe(303);
    const [replacement, ...more] = await logoFiles();
    expect(more).toEqual([]);
    expect(replacement?.name).toBe('new.png');
    expect(replacement?.file_id).not.toBe(fileId);
    const removed = await postForm(
      `${server.url}/portal/${id}/items/logo/files/${replacement?.file_id ?? ''}/remove`,
      {},
    );
    expect(removed.status).toBe(303);
    expect(
      (await visitor.get<{ items: { key: string; files: unknown[] }[] }>(`/portal/api/${id}`)).body.items[0]
        ?.files,
    ).toEqual([]);
  });

  it('limits portal writes per intake and per address, with Retry-After', async () => {
    const id = await intake();
    const limiter = server.server.services.limiter;
    const now = Date.now();
    for (let i = 0; i < PORTAL_LIMITS.writesPerIntake; i++)
      await limiter.hit(`portal:${id}`, PORTAL_LIMITS.writesPerIntake, now);
    const limited = await visitor.call('PUT', `/portal/api/${id}/items/about`, { body: { value: 'x' } });
    expectError(limited, 429, 'rate_limited');
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(
      (await postForm(`${server.url}/portal/${id}/items/about`, { value: 'x', action: 'save' })).status,
    ).toBe(429);
    // Reading is not limited.
    expect((await visitor.get(`/portal/${id}`)).status).toBe(200);
  });

  it('shows the account branding: name, logo from this origin, an accent colour that stays readable', async () => {
    const logo = `data:image/png;base64,${(await png(120, 40)).toString('base64')}`;
    const patched = await api.patch<{ name: string; branding: Record<string, unknown> }>('/v1/account', {
      name: 'Fjord Studio',
      branding: { logo_url: logo, accent_color: '#FFD400' },
    });
    expect(patched.status).toBe(200);
    expect(patched.body.branding).toEqual({ logo_url: logo, accent_color: '#ffd400' });
    expect(
      (await api.patch('/v1/account', { branding: { logo_url: 'https://cdn.example.com/logo.png' } })).status,
    ).toBe(400);
    const id = await intake();
    const page = await visitor.get(`/portal/${id}`);
    expect(page.text).toContain('Fjord Studio');
    const src = /<img class="logo" src="([^"]+)"/.exec(page.text)?.[1] ?? '';
    expect(src).toMatch(new RegExp(`^/portal/${id}/logo\\?v=[0-9a-f]{12}$`));
    const nonce = /style-src 'self' 'nonce-([^']+)'/.exec(
      page.headers.get('content-security-policy') ?? '',
    )?.[1];
    expect(page.text).toContain(`<style nonce="${nonce ?? 'missing'}">`);
    // Yellow on white is unreadable: the accent is darkened until white text on it passes 4.5:1.
    expect(page.text).not.toContain('--accent:#ffd400');
    expect(page.text).toMatch(/--accent:#[0-9a-f]{6};--accent-ink:#ffffff/);
    const image = await fetch(server.url + src);
    expect(image.headers.get('content-type')).toBe('image/png');
    expect(Buffer.from(await image.arrayBuffer())).toEqual(await png(120, 40));
    // Emails carry the logo and the accent too: the logo by an absolute address that names the
    // account (not the intake) and answers only at the current logo's version.
    const test = client(server.url, account.test_key);
    const mailed = await test.post<{ intake_id: string }>('/v1/intakes', {
      project_name: 'Branded',
      client: { email: 'c@example.com' },
      items: ITEMS,
    });
    let html = '';
    await expect
      .poll(async () => {
        const outbox = await test.get<{ messages: { html: string | null }[] }>(
          `/v1/test_helpers/outbox?intake_id=${mailed.body.intake_id}`,
        );
        html = outbox.body.messages[0]?.html ?? '';
        return html;
      })
      .toContain('<img src=');
    const logoUrl = /<img src="([^"]+)"/.exec(html)?.[1] ?? '';
    expect(logoUrl).toMatch(
      new RegExp(
        `^${server.server.services.config.appUrl}/portal/brand/${account.account_id}/logo\\?v=[0-9a-f]{12}$`,
      ),
    );
    expect(html).not.toContain(mailed.body.intake_id + '/logo');
    expect(html).toMatch(/bgcolor="#[0-9a-f]{6}"/);
    expect(html).not.toContain('#ffd400');
    const mailedLogo = await fetch(server.url + new URL(logoUrl).pathname + new URL(logoUrl).search);
    expect(mailedLogo.status).toBe(200);
    expect(mailedLogo.headers.get('cross-origin-resource-policy')).toBe('cross-origin');
    // Re-encoded as a PNG at twice the 40 px the emails show (mail clients often show no SVG or WebP).
    expect(mailedLogo.headers.get('content-type')).toBe('image/png');
    expect(await sharp(Buffer.from(await mailedLogo.arrayBuffer())).metadata()).toMatchObject({
      format: 'png',
      width: 240,
      height: 80,
    });
    expect((await fetch(`${server.url}${new URL(logoUrl).pathname}?v=000000000000`)).status).toBe(404);
    expect((await fetch(`${server.url}${new URL(logoUrl).pathname}`)).status).toBe(404);
    const free = client(server.url, (await server.createAccount({ plan: 'free' })).live_key);
    expectError(
      await free.patch('/v1/account', { branding: { accent_color: '#112233' } }),
      402,
      'plan_required',
    );
    const svg =
      '<svg xmlns="http://www.w3.org/2000/svg" width="300" height="100"><rect width="300" height="100" fill="#0f766e"/></svg>';
    await api.patch('/v1/account', {
      branding: { logo_url: `data:image/svg+xml;base64,${Buffer.from(svg).toString('base64')}` },
    });
    const svgMail = await test.post<{ intake_id: string }>('/v1/intakes', {
      project_name: 'Branded SVG',
      client: { email: 'c@example.com' },
      items: ITEMS,
    });
    let svgHtml = '';
    await expect
      .poll(async () => {
        const outbox = await test.get<{ messages: { html: string | null }[] }>(
          `/v1/test_helpers/outbox?intake_id=${svgMail.body.intake_id}`,
        );
        svgHtml = outbox.body.messages[0]?.html ?? '';
        return svgHtml;
      })
      .toContain('<img src=');
    const svgLogo = new URL(/<img src="([^"]+)"/.exec(svgHtml)?.[1] ?? '');
    expect(svgLogo.search).not.toBe(new URL(logoUrl).search);
    const rendered = await fetch(server.url + svgLogo.pathname + svgLogo.search);
    expect(rendered.headers.get('content-type')).toBe('image/png');
    expect(await sharp(Buffer.from(await rendered.arrayBuffer())).metadata()).toMatchObject({
      format: 'png',
      width: 240,
      height: 80,
    });
    // The old version's address answers no more.
    expect((await fetch(server.url + new URL(logoUrl).pathname + new URL(logoUrl).search)).status).toBe(404);
    await api.patch('/v1/account', { branding: { logo_url: null, accent_color: null } });
    expect((await visitor.get(`/portal/${id}`)).text).not.toContain('class="logo"');
    expect((await fetch(logoUrl.replace(server.server.services.config.appUrl, server.url))).status).toBe(404);
  });

  it('keeps the page light: HTML, script and stylesheet under 150 KB gzipped', async () => {
    const id = await intake();
    const page = await visitor.get(`/portal/${id}`);
    const script = /<script type="module" src="([^"]+)"/.exec(page.text)?.[1] ?? '';
    const style = /<link rel="stylesheet" href="([^"]+)"/.exec(page.text)?.[1] ?? '';
    expect(script).toMatch(/^\/portal\/assets\/portal\.[0-9a-f]{16}\.js$/);
    let total = gzipSync(page.text).length;
    for (const path of [script, style]) {
      const response = await fetch(server.url + path, { headers: { 'accept-encoding': 'gzip' } });
      expect(response.headers.get('cache-control')).toContain('immutable');
      expect(response.headers.get('content-encoding')).toBe('gzip');
      // fetch has already decoded the body: compress it again (as served, level 9) to count it.
      total += gzipSync(Buffer.from(await response.arrayBuffer()), { level: 9 }).length;
    }
    console.log(`portal page weight: ${(total / 1024).toFixed(1)} KB gzipped`);
    expect(total).toBeLessThan(150 * 1024);
  });
});
