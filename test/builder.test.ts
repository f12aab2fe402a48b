import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, type Client } from './helpers/http.js';
import { hiddenField, signedInOwner, type SignedInBrowser } from './helpers/signed-in.js';
import { startTestServer, type TestServer } from './helpers/server.js';

/**
 * The intake builder over plain HTTP, as a browser without script uses it: the add / remove /
 * add-a-field buttons post the form back and it is re-rendered; presets, text formats in words and
 * structured fields become the API's own item definitions; the preview changes nothing; editing
 * after sending goes through the services of PATCH and asks before discarding a client's answer.
 */
interface ItemRecord {
  key: string;
  label: string;
  type: string;
  status: string;
  required: boolean;
  constraints: Record<string, unknown>;
  schema: Record<string, unknown> | null;
  example: string | null;
}
interface IntakeRecord {
  status: string;
  due_date: string | null;
  chase_schedule: string;
  client_last_seen: string | null;
  items: ItemRecord[];
  recipients: { email: string }[];
}

describe('the intake builder without script', () => {
  let server: TestServer;
  let owner: SignedInBrowser;
  let api: Client;
  let base: string;
  let csrf: string;

  beforeAll(async () => {
    server = await startTestServer('sqlite');
    base = server.url;
    const account = await server.createAccount({ plan: 'agency' });
    owner = await signedInOwner(server, account.account_id);
    api = client(server.url, account.live_key);
    const page = await owner.get(`${base}/dashboard/intakes/new`);
    expect(page.status).toBe(200);
    csrf = hiddenField(await page.text(), '_csrf');
  });
  afterAll(async () => {
    await server?.stop();
  });

  const post = (path: string, fields: Record<string, string | string[]>) =>
    owner.postForm(`${base}${path}`, { _csrf: csrf, ...fields });

  it('names kinds of answer for people, keeps the key under Advanced, and never asks for a regex or JSON', async () => {
    const page = await (await owner.get(`${base}/dashboard/intakes/new`)).text();
    expect(page).toMatch(/>\s*Several files\s*<\/option>/);
    expect(page).toContain('Form with several fields');
    expect(page).not.toContain('>file_list<');
    expect(page).not.toMatch(/regular expression/i);
    expect(page).not.toMatch(/JSON Schema/i);
    // The key field sits inside the closed "Advanced" details of its card.
    const advanced = /<details class="advanced">([\s\S]*?)<\/details>/.exec(page)?.[1] ?? '';
    expect(advanced).toContain('name="items[0][key]"');
    expect(page).toContain('Digits only');
    expect(page).toContain('Logo: SVG or PNG, at least 1000 px wide');
  });

  it('speaks German to a German account, kinds, formats, presets and templates included', async () => {
    const german = await server.createAccount();
    expect(
      (await client(server.url, german.live_key).patch('/v1/account', { default_language: 'de' })).status,
    ).toBe(200);
    const browser = await signedInOwner(server, german.account_id);
    const page = await (await browser.get(`${base}/dashboard/intakes/new?start=brand_kit`)).text();
    for (const words of [
      'Mehrere Dateien',
      'Formular mit mehreren Feldern',
      'Nur Ziffern',
      'Logo: SVG oder PNG, mindestens 1000 px breit',
      'Reiner Text',
      'Markenpaket',
      'value="Ihr Logo"',
      'Erweitert',
      'Als Entwurf speichern und ansehen',
    ]) {
      expect(page, words).toContain(words);
    }
    for (const english of ['Several files', 'Digits only', 'Plain text', 'Advanced', 'Brand kit']) {
      expect(page, english).not.toContain(english);
    }
  });

  it('adds a card, a field and removes a card by posting the form back', async () => {
    const added = await post('/dashboard/intakes', {
      intent: 'add:structured',
      'items[0][label]': 'Logo',
      'items[0][type]': 'image',
    });
    expect(added.status).toBe(200);
    const page = await added.text();
    expect(page).toContain('value="Logo"');
    expect(page).toMatch(/<span id="added"><\/span>\s*<fieldset[\s\S]*?id="item-card-1"/);
    expect(page).toMatch(/id="item-1-type"[\s\S]*?<option value="structured"\s+selected/);
    expect(page).toContain('name="items[1][fields][1][label]"');
    expect(page).not.toContain('name="items[1][fields][2][label]"');

    const withField = await (
      await post('/dashboard/intakes', {
        intent: 'field:1',
        'items[0][label]': 'Logo',
        'items[1][label]': 'Company',
        'items[1][type]': 'structured',
        'items[1][fields][0][label]': 'Name',
        'items[1][fields][1][label]': 'City',
      })
    ).text();
    expect(withField).toContain('name="items[1][fields][3][label]"');

    const removed = await (
      await post('/dashboard/intakes', {
        intent: 'remove:0',
        'items[0][label]': 'Logo',
        'items[1][label]': 'Company',
      })
    ).text();
    expect(removed).not.toContain('value="Logo"');
    expect(removed).toContain('value="Company"');
  });

  it('starts from a ready-made template, and creates what the API would', async () => {
    const started = await (
      await owner.get(`${base}/dashboard/intakes/new?start=onboarding_documents`)
    ).text();
    expect(started).toContain('Started from “Onboarding documents”');
    expect(started).toContain('value="VAT number"');
    expect(started).toMatch(/<option value="vat_eu"\s+selected/);
    expect(started).toContain('value="Company name"');

    const created = await post('/dashboard/intakes', {
      intent: 'draft',
      project_name: 'Acme onboarding',
      client_email: 'dana@example.com',
      chase_schedule: 'default',
      // A preset chosen, nothing ticked by hand: the preset fills the constraints.
      'items[0][label]': 'Logo',
      'items[0][type]': 'image',
      'items[0][preset]': 'logo_transparent',
      'items[0][required]': 'on',
      // Constraint fields of other kinds are on the page without script: ignored for this kind.
      'items[0][max_chars]': '40',
      'items[1][label]': 'Logo',
      'items[1][type]': 'file_list',
      'items[1][formats]': ['pdf', 'docx'],
      'items[1][max_count]': '3',
      'items[2][label]': 'Postcode',
      'items[2][type]': 'text',
      'items[2][text_format]': 'postcode_de',
      'items[2][required]': 'on',
      'items[3][label]': 'Company',
      'items[3][type]': 'structured',
      'items[3][required]': 'on',
      'items[3][fields][0][label]': 'Name',
      'items[3][fields][0][kind]': 'text',
      'items[3][fields][0][required]': 'on',
      'items[3][fields][1][label]': 'Style',
      'items[3][fields][1][kind]': 'choice',
      'items[3][fields][1][options]': 'Modern\nClassic',
      'items[3][fields][2][label]': '',
    });
    expect(created.status).toBe(303);
    const location = created.headers.get('location') ?? '';
    expect(location).toMatch(/^\/dashboard\/intakes\/in_\w+\/preview\?notice=created$/);
    const id = location.split('/')[3] ?? '';
    const intake = (await api.get<IntakeRecord>(`/v1/intakes/${id}`)).body;
    expect(intake.status).toBe('draft');
    expect(intake.items.map((i) => [i.key, i.type])).toEqual([
      ['logo', 'image'],
      ['logo_2', 'file_list'],
      ['postcode', 'text'],
      ['company', 'structured'],
    ]);
    expect(intake.items[0]?.constraints).toEqual({
      formats: ['svg', 'png'],
      min_width: 1000,
      transparent_background: true,
    });
    expect(intake.items[1]?.constraints).toEqual({ formats: ['pdf', 'docx'], max_count: 3 });
    expect(intake.items[2]?.constraints).toEqual({ pattern: '[0-9]{5}' });
    expect(intake.items[2]?.example).toBe('10115');
    expect(intake.items[3]?.schema).toEqual({
      type: 'object',
      properties: {
        name: { type: 'string', title: 'Name', maxLength: 200 },
        style: { type: 'string', title: 'Style', enum: ['Modern', 'Classic'] },
      },
      required: ['name'],
      additionalProperties: false,
    });
  });

  it('names the item by its label when the service refuses it', async () => {
    const refused = await post('/dashboard/intakes', {
      intent: 'send',
      project_name: 'Counts',
      client_email: 'dana@example.com',
      'items[0][label]': 'Team photos',
      'items[0][type]': 'file_list',
      'items[0][min_count]': '5',
      'items[0][max_count]': '2',
    });
    expect(refused.status).toBe(422);
    const page = await refused.text();
    expect(page).toContain(
      '“Team photos” constraints.min_count: min_count (5) is greater than max_count (2)',
    );
    // What the owner typed is still there to fix.
    expect(page).toContain('value="Team photos"');
  });

  it('refuses a form without its CSRF token', async () => {
    const refused = await owner.postForm(`${base}/dashboard/intakes`, {
      intent: 'send',
      project_name: 'Forged',
      client_email: 'x@example.com',
      'items[0][label]': 'About',
    });
    expect(refused.status).toBe(403);
    const list = await api.get<{ total: number; intakes: { projectName: string }[] }>('/v1/intakes');
    expect(list.body.intakes.map((i) => i.projectName)).not.toContain('Forged');
  });

  async function sentIntake(): Promise<string> {
    const created = await api.post<{ intake_id: string }>('/v1/intakes', {
      project_name: 'Website',
      client: { email: 'client@example.com' },
      items: [
        { key: 'about', label: 'About you', type: 'longtext' },
        { key: 'tagline', label: 'Tagline', type: 'text' },
        { key: 'logo', label: 'Logo', type: 'image', required: false },
      ],
    });
    expect(created.status).toBe(201);
    return created.body.intake_id;
  }

  it('previews the client page without counting a visit, sending or changing anything', async () => {
    const id = await sentIntake();
    const before = (await api.get<IntakeRecord>(`/v1/intakes/${id}`)).body;
    const page = await owner.get(`${base}/dashboard/intakes/${id}/preview`);
    expect(page.status).toBe(200);
    const pageText = await page.text();
    expect(pageText).toContain(`src="/dashboard/intakes/${id}/preview/frame"`);
    expect(pageText).toContain('sandbox="allow-same-origin"');
    expect(pageText).toContain(`/portal/${id}</code>`);
    const frame = await owner.get(`${base}/dashboard/intakes/${id}/preview/frame`);
    expect(frame.status).toBe(200);
    const csp = frame.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("script-src 'none'");
    expect(csp).toContain("form-action 'none'");
    expect(csp).toContain("frame-ancestors 'self'");
    expect(frame.headers.get('x-frame-options')).toBe('SAMEORIGIN');
    const frameText = await frame.text();
    expect(frameText).toContain('About you');
    expect(frameText).toContain('Website');
    const after = (await api.get<IntakeRecord>(`/v1/intakes/${id}`)).body;
    expect(after.client_last_seen).toBeNull();
    expect(after).toEqual(before);
    const events = await server.server.services.db.kysely
      .selectFrom('events')
      .select('type')
      .where('intake_id', '=', id)
      .execute();
    expect(events.map((e) => e.type)).not.toContain('intake.viewed');
    expect(events.map((e) => e.type)).not.toContain('client.viewed');
  });

  it('previews unsaved cards as the client would see them, creating nothing', async () => {
    const before = (await api.get<{ total: number }>('/v1/intakes')).body.total;
    const preview = await post('/dashboard/intakes/preview', {
      intent: 'preview',
      project_name: 'Not saved yet',
      client_name: 'Dana',
      client_language: 'de',
      'items[0][label]': 'Ihr Logo',
      'items[0][type]': 'image',
      'items[0][preset]': 'logo',
      'items[1][label]': 'Broken',
      'items[1][type]': 'number',
      'items[1][min]': 'many',
    });
    expect(preview.status).toBe(200);
    expect(preview.headers.get('content-security-policy')).toContain("form-action 'none'");
    expect(preview.headers.get('content-security-policy')).toContain("script-src 'none'");
    const text = await preview.text();
    expect(text).toContain('Not saved yet');
    expect(text).toContain('Ihr Logo');
    expect(text).toContain('<html lang="de">');
    // A card the API would refuse is left out of the preview (saving names the problem).
    expect(text).not.toContain('Broken');
    expect((await api.get<{ total: number }>('/v1/intakes')).body.total).toBe(before);
    const forged = await owner.postForm(`${base}/dashboard/intakes/preview`, { 'items[0][label]': 'X' });
    expect(forged.status).toBe(403);
  });

  it("answers 404 for another account's intake on the preview, its frame and the edit page", async () => {
    const other = await server.createAccount();
    const theirs = await client(server.url, other.live_key).post<{ intake_id: string }>('/v1/intakes', {
      project_name: 'Their project',
      client: { email: 'client@example.com' },
      items: [{ key: 'about', label: 'About', type: 'text' }],
    });
    for (const path of ['preview', 'preview/frame', 'edit']) {
      const page = await owner.get(`${base}/dashboard/intakes/${theirs.body.intake_id}/${path}`);
      expect(page.status, path).toBe(404);
      expect(await page.text()).not.toContain('Their project');
    }
    const patched = await post(`/dashboard/intakes/${theirs.body.intake_id}/edit/settings`, {
      project_name: 'Taken over',
    });
    expect(patched.status).toBe(404);
  });

  it('edits a sent intake: details, an item, a new item, removing one, recipients', async () => {
    const id = await sentIntake();
    const edit = await owner.get(`${base}/dashboard/intakes/${id}/edit`);
    expect(edit.status).toBe(200);
    const settings = await post(`/dashboard/intakes/${id}/edit/settings`, {
      project_name: 'Website relaunch',
      due_date: '2099-01-31',
      chase_schedule: 'gentle',
      folder_id: '',
      client_name: 'Dana',
      client_phone: '',
      client_language: 'de',
    });
    expect(settings.status).toBe(303);
    let intake = (await api.get<IntakeRecord & { project_name: string }>(`/v1/intakes/${id}`)).body;
    expect(intake).toMatchObject({
      project_name: 'Website relaunch',
      due_date: '2099-01-31',
      chase_schedule: 'gentle',
    });

    const relabelled = await post(`/dashboard/intakes/${id}/edit/items/tagline`, {
      'items[0][label]': 'Your tagline',
      'items[0][type]': 'text',
      'items[0][required]': 'on',
      'items[0][text_format]': 'letters',
    });
    expect(relabelled.status).toBe(303);
    // Without script the add-items form is re-rendered with a card of the chosen kind.
    const roundTrip = await post(`/dashboard/intakes/${id}/edit/items`, {
      intent: 'add:date',
      'items[0][label]': 'About you',
      'items[0][type]': 'url',
    });
    expect(roundTrip.status).toBe(200);
    expect(await roundTrip.text()).toMatch(/id="item-n1-type"[\s\S]*?<option value="date"\s+selected/);
    const added = await post(`/dashboard/intakes/${id}/edit/items`, {
      intent: 'save',
      'items[0][label]': 'About you',
      'items[0][type]': 'url',
    });
    expect(added.status).toBe(303);
    const removed = await post(`/dashboard/intakes/${id}/edit/items/logo/remove`, {});
    expect(removed.status).toBe(303);
    intake = (await api.get<IntakeRecord & { project_name: string }>(`/v1/intakes/${id}`)).body;
    expect(intake.items.map((i) => [i.key, i.label, i.type])).toEqual([
      ['about', 'About you', 'longtext'],
      ['tagline', 'Your tagline', 'text'],
      ['about_you', 'About you', 'url'],
    ]);
    expect(intake.items[1]?.constraints).toEqual({ pattern: '\\p{L}+' });

    const filed = await post(`/dashboard/intakes/${id}/edit/settings`, {
      project_name: 'Website relaunch',
      due_date: '2099-01-31',
      chase_schedule: 'gentle',
      folder_id: '',
      new_folder: 'Bakeries',
      client_name: 'Dana',
      client_phone: '',
      client_language: 'de',
    });
    expect(filed.status).toBe(303);
    const folders = await api.get<{ folders: { id: string; name: string; intake_count: number }[] }>(
      '/v1/folders',
    );
    expect(folders.body.folders).toEqual([expect.objectContaining({ name: 'Bakeries', intake_count: 1 })]);
    const folderId = folders.body.folders[0]?.id;
    expect((await api.get<{ folder_id: string }>(`/v1/intakes/${id}`)).body.folder_id).toBe(folderId);
    const editPage = await (await owner.get(`${base}/dashboard/intakes/${id}/edit`)).text();
    expect(editPage).toMatch(new RegExp(`<option value="${folderId}"\\s+selected`));

    const recipient = await post(`/dashboard/intakes/${id}/edit/recipients`, {
      email: 'boss@example.com',
      name: 'Boss',
    });
    expect(recipient.status).toBe(303);
    expect((await api.get<IntakeRecord>(`/v1/intakes/${id}`)).body.recipients.map((r) => r.email)).toEqual([
      'client@example.com',
      'boss@example.com',
    ]);
    const gone = await post(`/dashboard/intakes/${id}/edit/recipients/remove`, { email: 'boss@example.com' });
    expect(gone.status).toBe(303);
    expect((await api.get<IntakeRecord>(`/v1/intakes/${id}`)).body.recipients).toHaveLength(1);
  });

  it('saves only what changed: a new project name leaves the reminders as planned', async () => {
    const id = await sentIntake();
    type Status = { chases: { status: string; scheduled_for: string | null }[] };
    const planned = async () =>
      (await api.get<Status>(`/v1/intakes/${id}/status`)).body.chases.filter((c) => c.status === 'scheduled');
    const before = await planned();
    expect(before).toHaveLength(1);
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const fields = {
      project_name: 'Website, renamed',
      due_date: '',
      chase_schedule: 'default',
      folder_id: '',
      client_name: '',
      client_phone: '',
      client_language: 'en',
    };
    expect((await post(`/dashboard/intakes/${id}/edit/settings`, fields)).status).toBe(303);
    expect(await planned()).toEqual(before);
    // Changing the reminders re-plans them (from now, as PATCH does).
    expect(
      (await post(`/dashboard/intakes/${id}/edit/settings`, { ...fields, chase_schedule: 'gentle' })).status,
    ).toBe(303);
    expect(await planned()).not.toEqual(before);
  });

  it("asks before discarding the client's answer, and discards it only when told", async () => {
    const id = await sentIntake();
    const portal = client(server.url);
    expect(
      (await portal.call('PUT', `/portal/api/${id}/items/tagline`, { body: { value: 'Bread & daily' } }))
        .status,
    ).toBe(200);
    expect((await portal.post(`/portal/api/${id}/items/tagline/submit`)).status).toBe(200);
    const change = {
      'items[0][label]': 'Tagline',
      'items[0][type]': 'text',
      'items[0][required]': 'on',
      'items[0][text_format]': 'digits',
    };
    const asked = await post(`/dashboard/intakes/${id}/edit/items/tagline`, change);
    expect(asked.status).toBe(409);
    const question = await asked.text();
    expect(question).toContain('The client’s answer would be discarded');
    expect(question).toContain('would no longer fit: “Bread &amp; daily”.');
    expect(question).toContain('name="discard" value="on"');
    // The card shows what the owner chose, not the stored definition.
    expect(question).toMatch(/<option value="digits"\s+selected/);
    let item = (await api.get<IntakeRecord>(`/v1/intakes/${id}`)).body.items.find((i) => i.key === 'tagline');
    expect(item).toMatchObject({ status: 'submitted', constraints: {} });
    const removing = await post(`/dashboard/intakes/${id}/edit/items/tagline/remove`, {});
    expect(removing.status).toBe(409);

    const discarded = await post(`/dashboard/intakes/${id}/edit/items/tagline`, { ...change, discard: 'on' });
    expect(discarded.status).toBe(303);
    item = (await api.get<IntakeRecord>(`/v1/intakes/${id}`)).body.items.find((i) => i.key === 'tagline');
    expect(item).toMatchObject({ status: 'pending', constraints: { pattern: '[0-9]+' } });
  });
});
