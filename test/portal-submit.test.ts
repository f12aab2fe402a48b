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

interface ItemView {
  key: string;
  status: string;
  value: unknown;
}

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
});
