import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATABASES } from './helpers/env.js';
import { client, type Client } from './helpers/http.js';
import { png } from './helpers/images.js';
import { expectError } from './helpers/security.js';
import { startTestServer, type TestServer } from './helpers/server.js';

/** Sending answers from the portal: what may be submitted, the one send for everything, changes after it. */
const ITEMS = [
  { key: 'about', label: 'About you', type: 'longtext', constraints: { min_chars: 5 } },
  { key: 'site', label: 'Website', type: 'url' },
  { key: 'note', label: 'A note', type: 'text', required: false },
  { key: 'contract', label: 'Signed contract', type: 'file', required: false },
  { key: 'logo', label: 'Logo', type: 'image', constraints: { formats: ['png'] } },
];

type ItemView = Record<string, unknown> & {
  key: string;
  status: string;
  value: unknown;
};

describe.each(DATABASES)('sending answers from the portal on %s', (database) => {
  let server: TestServer;
  let api: Client;
  let portal: Client;

  beforeAll(async () => {
    server = await startTestServer(database);
    const account = await server.createAccount({ plan: 'agency' });
    api = client(server.url, account.live_key);
    portal = client(server.url);
  });
  afterAll(async () => server.stop());

  async function intake(extra: Record<string, unknown> = {}): Promise<string> {
    const created = await api.post<{ intake_id: string }>('/v1/intakes', {
      project_name: 'Relaunch',
      client: { email: 'c@example.com', name: 'Dana' },
      items: ITEMS,
      ...extra,
    });
    expect(created.status, created.text).toBe(201);
    return created.body.intake_id;
  }

  async function statusOf(id: string, key: string): Promise<string | undefined> {
    const view = await portal.get<{ items: ItemView[] }>(`/portal/api/${id}`);
    return view.body.items.find((i) => i.key === key)?.status;
  }

  const save = (id: string, key: string, value: unknown) =>
    portal.call<ItemView>('PUT', `/portal/api/${id}/items/${key}`, { body: { value } });

  async function upload(id: string, key: string) {
    return portal.call<{ file_id: string }>('POST', `/portal/api/${id}/items/${key}/files`, {
      rawBody: await png(64, 64),
      headers: { 'content-type': 'image/png', 'x-filename': 'file.png' },
    });
  }

  it('refuses to submit an item with nothing in it, required or not; the item stays open', async () => {
    const id = await intake();
    for (const key of ['note', 'contract', 'about']) {
      const refused = await portal.post(`/portal/api/${id}/items/${key}/submit`);
      expectError(refused, 422, 'unprocessable');
      expect(await statusOf(id, key)).toBe('pending');
    }
    expect((await save(id, 'note', '')).status).toBe(200);
    expectError(await portal.post(`/portal/api/${id}/items/note/submit`), 422, 'unprocessable');
    expect(await statusOf(id, 'note')).toBe('pending');
    // The page's form says so in the client's words.
    const page = await fetch(`${server.url}/portal/${id}/items/contract`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'action=submit',
    });
    expect(page.status).toBe(422);
    expect(await page.text()).toContain('There is nothing here to send yet.');
    expect(await statusOf(id, 'contract')).toBe('pending');
    expect((await upload(id, 'contract')).status).toBe(201);
    expect((await portal.post(`/portal/api/${id}/items/contract/submit`)).status).toBe(200);
  });

  interface SubmitAll {
    submitted: string[];
    still_needed: string[];
    invalid: { item_key: string; message: string }[];
  }

  const eventsOf = async (id: string, type: string) =>
    server.server.services.db.kysely
      .selectFrom('events')
      .select('payload')
      .where('intake_id', '=', id)
      .where('type', '=', type)
      .execute();

  it('one send submits every saved, valid, unsent answer and names what is still needed', async () => {
    const id = await intake();
    expect((await save(id, 'about', 'Hi')).status).toBe(200);
    expect((await save(id, 'site', 'https://example.com')).status).toBe(200);
    expect((await save(id, 'note', '')).status).toBe(200);
    expect((await upload(id, 'contract')).status).toBe(201);
    const sent = await portal.post<SubmitAll>(`/portal/api/${id}/submit`);
    expect(sent.status, sent.text).toBe(200);
    expect(sent.body.submitted).toEqual(['site', 'contract']);
    expect(sent.body.still_needed).toEqual(['about', 'logo']);
    expect(sent.body.invalid).toEqual([
      { item_key: 'about', message: 'about.min_chars: at least 5 characters needed' },
    ]);
    expect(await statusOf(id, 'site')).toBe('submitted');
    expect(await statusOf(id, 'contract')).toBe('submitted');
    expect(await statusOf(id, 'about')).toBe('pending');
    expect(await statusOf(id, 'note')).toBe('pending');
    const submittedEvents = await eventsOf(id, 'item.submitted');
    expect(
      submittedEvents.map((e) => (JSON.parse(e.payload) as { item_key: string }).item_key).sort(),
    ).toEqual(['contract', 'site']);
    const status = await api.get<{ status: string; progress: { submitted: number } }>(
      `/v1/intakes/${id}/status`,
    );
    expect(status.body.status).toBe('in_progress');
    expect(status.body.progress.submitted).toBe(2);

    // Nothing new saved: nothing sent again.
    const again = await portal.post<SubmitAll>(`/portal/api/${id}/submit`, {});
    expect(again.body).toEqual({
      submitted: [],
      still_needed: ['about', 'logo'],
      invalid: [{ item_key: 'about', message: 'about.min_chars: at least 5 characters needed' }],
    });
    expect(await eventsOf(id, 'item.submitted')).toHaveLength(2);

    // The rest arrives: everything required is sent, intake.completed fires once.
    await save(id, 'about', 'We build boats.');
    await upload(id, 'logo');
    const last = await portal.post<SubmitAll>(`/portal/api/${id}/submit`);
    expect(last.body).toEqual({ submitted: ['about', 'logo'], still_needed: [], invalid: [] });
    expect(await eventsOf(id, 'intake.completed')).toHaveLength(1);
  });

  it('answers 404 for unknown intakes, 410 for archived ones, 400 for a body with fields', async () => {
    expectError(await portal.post(`/portal/api/in_${'Q'.repeat(22)}/submit`), 404, 'not_found');
    const id = await intake();
    expectError(await portal.post(`/portal/api/${id}/submit`, { items: ['about'] }), 400, 'invalid_request');
    await api.post(`/v1/intakes/${id}/archive`);
    expectError(await portal.post(`/portal/api/${id}/submit`), 410, 'gone');
  });

  interface HistoryItem {
    key: string;
    history: { action: string }[];
  }
  const historyOf = async (id: string, key: string) =>
    (await api.get<{ items: HistoryItem[] }>(`/v1/intakes/${id}`)).body.items
      .find((i) => i.key === key)
      ?.history.map((h) => h.action);
  const autoApprovals = async (id: string, key: string) =>
    server.server.services.db.kysely
      .selectFrom('jobs')
      .select('id')
      .where('kind', '=', 'auto_approve')
      .where('subject_id', '=', `${id}/${key}`)
      .execute();

  it('a submitted answer can be changed and sent again until it is reviewed; after approval, 409', async () => {
    const id = await intake();
    await save(id, 'site', 'https://example.com');
    expect((await portal.post(`/portal/api/${id}/items/site/submit`)).status).toBe(200);
    const changed = await save(id, 'site', 'https://example.org');
    expect(changed.status, changed.text).toBe(200);
    expect(changed.body).toMatchObject({ status: 'submitted', value: 'https://example.org' });
    const sent = await portal.post<SubmitAll>(`/portal/api/${id}/submit`);
    expect(sent.body.submitted).toEqual(['site']);
    expect(await historyOf(id, 'site')).toEqual(['submitted', 'submitted']);
    expect(await eventsOf(id, 'item.submitted')).toHaveLength(2);
    expect((await portal.post(`/portal/api/${id}/items/site/submit`)).status).toBe(200);

    // A sent file can be replaced; emptied, the item is open again and nobody can approve nothing.
    const file = await upload(id, 'contract');
    expect((await portal.post(`/portal/api/${id}/items/contract/submit`)).status).toBe(200);
    expect(await autoApprovals(id, 'contract')).toHaveLength(1);
    expect((await portal.delete(`/portal/api/${id}/items/contract/files/${file.body.file_id}`)).status).toBe(
      204,
    );
    expect(await statusOf(id, 'contract')).toBe('pending');
    expect(await autoApprovals(id, 'contract')).toHaveLength(0);
    expect((await upload(id, 'contract')).status).toBe(201);
    expect((await portal.post<SubmitAll>(`/portal/api/${id}/submit`)).body.submitted).toEqual(['contract']);

    // Reviewed: accepted, and no longer the client's to change.
    expect((await api.post(`/v1/intakes/${id}/items/site/approve`)).status).toBe(200);
    expectError(await save(id, 'site', 'https://example.net'), 409, 'conflict');
    expectError(await portal.post(`/portal/api/${id}/items/site/submit`), 409, 'conflict');
    expect((await api.post(`/v1/intakes/${id}/items/contract/approve`)).status).toBe(200);
    expectError(await upload(id, 'contract'), 409, 'conflict');
    const page = await portal.get(`/portal/${id}`);
    expect(page.text).toContain('Accepted: nothing more to do here.');
  });

  it('the page sends everything with one plain form post, and shows what was held back', async () => {
    const id = await intake();
    await save(id, 'about', 'Hi');
    await save(id, 'site', 'https://example.com');
    const post = () =>
      fetch(`${server.url}/portal/${id}/submit`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: '',
      });
    const page = await portal.get(`/portal/${id}`);
    expect(page.text).toContain('2 answers are saved but not sent yet.');
    expect(page.text).toContain('Saved, not sent yet');
    expect(page.text).not.toContain('All done');
    const partly = await post();
    expect(partly.status).toBe(200);
    const html = await partly.text();
    expect(html).toContain('1 answer sent. Thank you!');
    expect(html).toContain('1 answer was not sent: see the message at the item.');
    expect(html).toMatch(/id="item-about-error"[^>]*>\s*Too short: at least 5 characters\./);
    expect(await statusOf(id, 'site')).toBe('submitted');
    await save(id, 'about', 'We build boats.');
    const sent = await post();
    expect(sent.status).toBe(303);
    expect(sent.headers.get('location')).toBe(`/portal/${id}?notice=sent&count=1#summary`);
    expect((await portal.get(`/portal/${id}?notice=sent&count=1`)).text).toContain(
      '1 answer sent. Thank you!',
    );
  });

  it('takes input as people type it: a web address without https://, an example that shows the form', async () => {
    const id = await intake({
      items: [
        { key: 'site', label: 'Website', type: 'url' },
        {
          key: 'iban',
          label: 'IBAN',
          type: 'text',
          constraints: { pattern: '[A-Z]{2}[0-9]{2}[0-9 ]{10,30}' },
          example: 'DE89 3704 0044 0532 0130 00',
        },
      ],
    });
    const site = await save(id, 'site', 'baeckerei-mueller.de');
    expect(site.status, site.text).toBe(200);
    expect(site.body.value).toBe('https://baeckerei-mueller.de');
    expectError(await save(id, 'site', 'mailto:info@example.com'), 422, 'unprocessable');

    const view = await portal.get<{ items: (ItemView & { example: string | null })[] }>(`/portal/api/${id}`);
    expect(view.body.items.map((i) => i.example)).toEqual([null, 'DE89 3704 0044 0532 0130 00']);
    const page = await portal.get(`/portal/${id}`);
    expect(page.text).toContain('placeholder="DE89 3704 0044 0532 0130 00"');
    const refused = await fetch(`${server.url}/portal/${id}/items/iban`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'value=12345&action=submit',
    });
    expect(refused.status).toBe(422);
    expect(await refused.text()).toContain(
      'This does not have the expected form. For example: DE89 3704 0044 0532 0130 00',
    );

    // The caller edits the example like any other part of the definition; null removes it.
    const patched = await api.patch(`/v1/intakes/${id}/items/iban`, {
      example: 'DE12 3456 7890 1234 5678 90',
    });
    expect(patched.status, patched.text).toBe(200);
    const owner = await api.get<{ items: { key: string; example: string | null }[] }>(`/v1/intakes/${id}`);
    expect(owner.body.items.find((i) => i.key === 'iban')?.example).toBe('DE12 3456 7890 1234 5678 90');
    await api.patch(`/v1/intakes/${id}/items/iban`, { example: null });
    expect((await portal.get(`/portal/${id}`)).text).not.toContain('DE12');
    expect(
      (
        await api.post(`/v1/intakes`, {
          project_name: 'x',
          client: { email: 'c@example.com' },
          items: [{ key: 'a', label: 'A', type: 'text', example: 'x'.repeat(201) }],
        })
      ).status,
    ).toBe(400);
  });

  it('reminders list saved answers not sent yet as "saved, not yet sent", not as missing', async () => {
    const created = await server.createAccount({ plan: 'agency' });
    const test = client(server.url, created.test_key);
    await client(server.url, created.live_key).patch('/v1/account', { name: 'Studio Nord' });
    const made = await test.post<{ intake_id: string }>('/v1/intakes', {
      project_name: 'Relaunch',
      client: { email: 'dana@example.test', name: 'Dana' },
      items: ITEMS,
    });
    const id = made.body.intake_id;
    expect((await upload(id, 'contract')).status).toBe(201);
    expect((await save(id, 'about', 'We build boats.')).status).toBe(200);
    expect((await test.post('/v1/test_helpers/advance_clock', { seconds: 2 * 86_400 + 3600 })).status).toBe(
      200,
    );
    const messages = await test.get<{ messages: { subject: string | null; text: string | null }[] }>(
      `/v1/test_helpers/outbox?intake_id=${id}`,
    );
    const reminder = messages.body.messages.find((m) => m.subject === 'Reminder: Relaunch');
    const text = reminder?.text ?? '';
    // The list says what is needed (a count before it only repeated it).
    expect(text).not.toContain('Items still needed');
    expect(text).toContain('Still needed:\n- Website\n- Logo\n');
    expect(text).toContain('Saved, not yet sent:\n- About you\n- Signed contract\n');
    expect(text).toContain('press “Send” so Studio Nord receives them');
  });

  it('reads phone numbers in the client country and stores them in E.164', async () => {
    const phoneItems = [{ key: 'phone', label: 'Phone', type: 'phone' }];
    const named = await api.post<{ intake_id: string }>('/v1/intakes', {
      project_name: 'Bakery',
      client: { email: 'c@example.com', country: 'de' },
      items: phoneItems,
    });
    expect(named.status, named.text).toBe(201);
    const id = named.body.intake_id;
    const shown = await api.get<{ client: { country: string | null } }>(`/v1/intakes/${id}`);
    expect(shown.body.client.country).toBe('DE');
    const saved = await save(id, 'phone', '030 1234567');
    expect(saved.status, saved.text).toBe(200);
    expect(saved.body.value).toBe('+49301234567');
    expect((await save(id, 'phone', '+44 20 7946 0958')).body.value).toBe('+442079460958');
    expect((await portal.get(`/portal/${id}`)).text).toContain('placeholder="01512 3456789"');

    // Changed by PATCH; cleared, the time zone and then the language region decide.
    const patched = await api.patch<{ client: { country: string | null } }>(`/v1/intakes/${id}`, {
      client: { country: 'NL' },
    });
    expect(patched.body.client.country).toBe('NL');
    expect((await save(id, 'phone', '06 12345678')).body.value).toBe('+31612345678');
    await api.patch(`/v1/intakes/${id}`, { client: { country: null, timezone: 'Europe/Vienna' } });
    expect((await save(id, 'phone', '01 5123456')).body.value).toBe('+4315123456');
    const byLanguage = await intake({
      client: { email: 'c@example.com', language: 'fr-CH' },
      items: phoneItems,
    });
    expect((await save(byLanguage, 'phone', '044 668 18 00')).body.value).toBe('+41446681800');
    const unknown = await intake({ client: { email: 'c@example.com' }, items: phoneItems });
    expectError(await save(unknown, 'phone', '030 1234567'), 422, 'unprocessable');

    expectError(
      await api.post('/v1/intakes', {
        project_name: 'x',
        client: { email: 'c@example.com', country: 'DEU' },
        items: phoneItems,
      }),
      400,
      'invalid_request',
    );
  });
});
