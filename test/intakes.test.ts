import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATABASES } from './helpers/env.js';
import { client, type Client } from './helpers/http.js';
import { jpeg, png } from './helpers/images.js';
import { expectError, expectSecured } from './helpers/security.js';
import { startLocalS3, type LocalS3 } from './helpers/s3.js';
import { connectToPostgres, startTestServer, type TestServer } from './helpers/server.js';

type Body = Record<string, unknown>;
interface ItemView {
  key: string;
  status: string;
  value: unknown;
  secret_saved: boolean;
  files: { file_id: string }[];
  revision_note: string | null;
}
interface ResultItem {
  key: string;
  status: string;
  value: unknown;
  revealed_at?: string | null;
}

const ITEMS = [
  {
    key: 'logo',
    label: 'Your logo',
    type: 'image',
    constraints: { formats: ['png', 'svg'], min_width: 1000, transparent_background: true },
  },
  {
    key: 'photos',
    label: 'Team photos',
    type: 'file_list',
    constraints: { formats: ['jpg'], min_count: 2, max_count: 3 },
  },
  { key: 'about', label: 'About you', type: 'longtext', constraints: { max_chars: 200 } },
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
  { key: 'wp_password', label: 'WordPress password', type: 'secret' },
  { key: 'website', label: 'Website', type: 'url', required: false },
];

/** Uploads a file through the portal API as a raw body. */
function upload(
  portal: Client,
  intakeId: string,
  key: string,
  bytes: Buffer,
  name: string,
  type = 'application/octet-stream',
) {
  return portal.call<Body>('POST', `/portal/api/${intakeId}/items/${key}/files`, {
    rawBody: bytes,
    headers: { 'content-type': type, 'x-filename': encodeURIComponent(name) },
  });
}

const SETUPS = DATABASES.flatMap((database) =>
  (['local', 's3'] as const).map((storage) => ({ database, storage })),
);

describe.each(SETUPS)('intakes end to end on $database with $storage storage', ({ database, storage }) => {
  let server: TestServer;
  let live: Client;
  let test: Client;
  let portal: Client;
  let reader: Client;
  let anonymous: Client;
  let accountId: string;

  let s3: LocalS3 | undefined;

  beforeAll(async () => {
    s3 = storage === 's3' ? await startLocalS3() : undefined;
    server = await startTestServer(database, s3 ? { STORAGE_URL: s3.storageUrl } : {});
    const account = await server.createAccount({ plan: 'agency' });
    accountId = account.account_id;
    live = client(server.url, account.live_key);
    test = client(server.url, account.test_key);
    portal = client(server.url);
    anonymous = client(server.url);
    const readerKey = await live.post<{ key: string }>('/v1/keys', {
      name: 'reader',
      scopes: ['intakes:read'],
    });
    reader = client(server.url, readerKey.body.key);
  });
  afterAll(async () => {
    await server.stop();
    await s3?.stop();
  });

  /** The intake's event types in time order (events of one millisecond in no particular order). */
  async function events(intakeId: string): Promise<string[]> {
    const rows = await server.server.services.db.kysely
      .selectFrom('events')
      .select(['type'])
      .where('intake_id', '=', intakeId)
      .orderBy('occurred_at')
      .execute();
    return rows.map((r) => r.type);
  }

  it('secures the intake routes', async () => {
    const body = { project_name: 'x', client: { email: 'a@example.com' }, items: ITEMS };
    await expectSecured(anonymous, reader, 'POST', '/v1/intakes', body);
    await expectSecured(anonymous, undefined, 'GET', '/v1/intakes');
    await expectSecured(anonymous, reader, 'POST', '/v1/templates', { name: 't', items: ITEMS });
  });

  it('plays the whole story: define, fill in, revise, approve, collect, archive, delete', async () => {
    const created = await live.post<Body>(
      '/v1/intakes',
      {
        project_name: 'Website refresh',
        client: { email: 'Dana@Example.com', name: 'Dana' },
        items: ITEMS,
        due_date: '2099-01-31',
      },
      { headers: { 'idempotency-key': 'story-1' } },
    );
    expect(created.status).toBe(201);
    const id = created.body.intake_id as string;
    expect(id).toMatch(/^in_[0-9A-Za-z]{22}$/);
    expect(created.body).toMatchObject({
      status: 'sent',
      portal_url: `${server.server.services.config.appUrl}/portal/${id}`,
    });
    expect((created.body.items as Body[]).map((i) => i.status)).toEqual(Array(ITEMS.length).fill('pending'));

    const replay = await live.post<Body>(
      '/v1/intakes',
      {
        project_name: 'Website refresh',
        client: { email: 'Dana@Example.com', name: 'Dana' },
        items: ITEMS,
        due_date: '2099-01-31',
      },
      { headers: { 'idempotency-key': 'story-1' } },
    );
    expect(replay.status).toBe(200);
    expect(replay.body.intake_id).toBe(id);
    const clash = await live.post<Body>(
      '/v1/intakes',
      { project_name: 'Other', client: { email: 'x@example.com' }, items: ITEMS },
      { headers: { 'idempotency-key': 'story-1' } },
    );
    expectError(clash, 409, 'conflict');
    expect((clash.body.resource as Body).intake_id).toBe(id);

    // The client opens the portal.
    const view = await portal.get<Body>(`/portal/api/${id}`);
    expect(view.status).toBe(200);
    expect(view.body).toMatchObject({ project_name: 'Website refresh', client_name: 'Dana', status: 'sent' });
    const status0 = await live.get<Body>(`/v1/intakes/${id}/status`);
    expect(status0.body.client_last_seen).toEqual(expect.any(String));
    // The first view is both intake.viewed and client.viewed, recorded together (often in one
    // millisecond, and then in no particular order).
    const [first, ...viewed] = await events(id);
    expect([first, viewed.sort()]).toEqual(['intake.sent', ['client.viewed', 'intake.viewed']]);

    // Logo: checked by content and on the decoded image.
    expectError(
      await upload(portal, id, 'logo', await png(500, 300, true), 'small.png', 'image/png'),
      422,
      'unprocessable',
    );
    const opaque = await upload(portal, id, 'logo', await png(1200, 600, false), 'opaque.png', 'image/png');
    expectError(opaque, 422, 'unprocessable');
    expect(opaque.body.message).toContain('transparent_background');
    const disguised = await upload(portal, id, 'logo', await jpeg(1200), 'logo.png', 'image/png');
    expectError(disguised, 422, 'unprocessable');
    expect(disguised.body.message).toContain('formats');
    const logoBytes = await png(1200, 600, true);
    const logo = await upload(portal, id, 'logo', logoBytes, 'logo.png', 'image/png');
    expect(logo.status, JSON.stringify(logo.body)).toBe(201);
    expect(logo.body).toMatchObject({
      name: 'logo.png',
      size: logoBytes.length,
      content_type: 'image/png',
      width: 1200,
      height: 600,
    });
    // A one-file item takes a second file as its replacement, in one step: the first one goes.
    const again = await upload(portal, id, 'logo', logoBytes, 'again.png', 'image/png');
    expect(again.status, JSON.stringify(again.body)).toBe(201);

    // Photos: a list with a minimum.
    const photo1 = await upload(portal, id, 'photos', await jpeg(800), 'one.jpg', 'image/jpeg');
    expect(photo1.status).toBe(201);
    expectError(await portal.post(`/portal/api/${id}/items/photos/submit`), 422, 'unprocessable');
    const photo2 = await upload(portal, id, 'photos', await jpeg(640), 'two.jpg', 'image/jpeg');
    const extra = await upload(portal, id, 'photos', await jpeg(320), 'three.jpg', 'image/jpeg');
    expect(extra.status).toBe(201);
    expect(
      (await portal.delete(`/portal/api/${id}/items/photos/files/${extra.body.file_id as string}`)).status,
    ).toBe(204);
    expect(photo2.status).toBe(201);

    // Texts, structured data and a secret, with autosave.
    const tooLong = await portal.call('PUT', `/portal/api/${id}/items/about`, {
      body: { value: 'x'.repeat(201) },
    });
    expectError(tooLong, 422, 'unprocessable');
    expect(tooLong.body.message).toContain('max_chars');
    expect(
      (await portal.call('PUT', `/portal/api/${id}/items/about`, { body: { value: 'We build boats.' } }))
        .status,
    ).toBe(200);
    expect((await live.get(`/v1/intakes/${id}`)).body.status).toBe('in_progress');
    await portal.call('PUT', `/portal/api/${id}/items/brand`, { body: { value: { company: 'Nord' } } });
    const badBrand = await portal.post(`/portal/api/${id}/items/brand/submit`);
    expectError(badBrand, 422, 'unprocessable');
    expect(badBrand.body.message).toContain('founded');
    await portal.call('PUT', `/portal/api/${id}/items/brand`, {
      body: { value: { company: 'Nord', founded: 1999 } },
    });
    await portal.call('PUT', `/portal/api/${id}/items/wp_password`, {
      body: { value: 'hunter2-correct-horse' },
    });
    const reloaded = await portal.get<{ items: ItemView[] }>(`/portal/api/${id}`);
    const byKey = Object.fromEntries(reloaded.body.items.map((i) => [i.key, i]));
    expect(byKey.about?.value).toBe('We build boats.');
    expect(byKey.wp_password?.value).toBeNull();
    expect(byKey.wp_password?.secret_saved).toBe(true);
    expect(reloaded.text).not.toContain('hunter2');
    expect(byKey.photos?.files).toHaveLength(2);

    for (const key of ['logo', 'photos', 'about', 'brand', 'wp_password']) {
      const submitted = await portal.post<ItemView>(`/portal/api/${id}/items/${key}/submit`);
      expect(submitted.status, `${key}: ${submitted.text}`).toBe(200);
      expect(submitted.body.status).toBe('submitted');
    }
    // Not reviewed yet: the client may still change an answer and send it again (CONTRACT).
    expect(
      (await portal.call('PUT', `/portal/api/${id}/items/about`, { body: { value: 'We build boats.' } }))
        .status,
    ).toBe(200);
    expect((await portal.post(`/portal/api/${id}/items/about/submit`)).status).toBe(200);

    const status1 = await live.get<Body>(`/v1/intakes/${id}/status`);
    expect(status1.body.progress).toEqual({
      submitted: 5,
      total: 6,
      outstanding: 1,
      percent: 83,
      awaiting_review: 5,
    });
    expect(status1.text).not.toContain('hunter2');
    expect(status1.text).not.toContain('/files/');
    expect(await events(id)).toContain('intake.completed');

    // Revision and resubmission.
    const revision = await live.post<Body>(`/v1/intakes/${id}/revision`, {
      item_key: 'about',
      note: 'Add your founding year.',
    });
    expect(revision.body).toEqual({
      intake_id: id,
      item_key: 'about',
      status: 'needs_revision',
      client_notified: true,
    });
    const withNote = await portal.get<{ items: ItemView[] }>(`/portal/api/${id}`);
    expect(withNote.body.items.find((i) => i.key === 'about')?.revision_note).toBe('Add your founding year.');
    await portal.call('PUT', `/portal/api/${id}/items/about`, {
      body: { value: 'We build boats since 1999.' },
    });
    expect((await portal.post<ItemView>(`/portal/api/${id}/items/about/submit`)).body.status).toBe(
      'submitted',
    );

    // Approvals and results.
    for (const key of ['logo', 'photos', 'about']) {
      expect((await live.post(`/v1/intakes/${id}/items/${key}/approve`)).body).toEqual({
        intake_id: id,
        item_key: key,
        status: 'approved',
      });
    }
    expect((await live.post(`/v1/intakes/${id}/items/logo/approve`)).status).toBe(200);
    expectError(await live.post(`/v1/intakes/${id}/items/website/approve`), 409, 'conflict');

    const results = await live.get<{ items: ResultItem[] }>(`/v1/intakes/${id}/results`);
    expect(results.body.items.map((i) => i.key)).toEqual(['logo', 'photos', 'about']);
    const logoResult = results.body.items[0]?.value as {
      files: { url: string; url_expires_at: string; name: string }[];
    };
    expect(logoResult.files.map((f) => f.name)).toEqual(['again.png']);
    const fileUrl = logoResult.files[0]?.url ?? '';
    const expires = Date.parse(logoResult.files[0]?.url_expires_at ?? '');
    expect(expires - Date.now()).toBeGreaterThan(23.9 * 3600 * 1000);
    const download = await fetch(fileUrl);
    expect(download.status).toBe(200);
    expect(Buffer.from(await download.arrayBuffer()).equals(logoBytes)).toBe(true);
    expect(download.headers.get('content-disposition')).toContain('attachment');
    // Flip the signature's last hex digit: the same URL with a wrong signature is refused.
    const tampered = fileUrl.replace(/([0-9a-f])$/, (d) => (d === '0' ? '1' : '0'));
    expect(tampered).not.toBe(fileUrl);
    expect((await fetch(tampered)).status).toBe(403);
    expect(results.body.items[2]?.value).toBe('We build boats since 1999.');

    expect(
      (await live.get<{ items: ResultItem[] }>(`/v1/intakes/${id}/results?only_new=true`)).body.items,
    ).toEqual([]);
    await live.post(`/v1/intakes/${id}/items/brand/approve`);
    const fresh = await live.get<{ items: ResultItem[] }>(`/v1/intakes/${id}/results?only_new=true`);
    expect(fresh.body.items.map((i) => [i.key, i.value])).toEqual([
      ['brand', { company: 'Nord', founded: 1999 }],
    ]);
    const pending = await live.get<{ items: ResultItem[] }>(
      `/v1/intakes/${id}/results?only_new=true&include_pending=true`,
    );
    expect(pending.body.items.map((i) => i.key)).toEqual(['wp_password']);
    expect(pending.body.items[0]?.value).toBe('hunter2-correct-horse');

    // Secrets: once, and only to secrets:read.
    await live.post(`/v1/intakes/${id}/items/wp_password/approve`);
    const readerResults = await reader.get<{ items: ResultItem[] }>(`/v1/intakes/${id}/results`);
    expect(readerResults.body.items.find((i) => i.key === 'wp_password')?.value).toBeNull();
    const second = await live.get<{ items: ResultItem[] }>(`/v1/intakes/${id}/results`);
    const secretAgain = second.body.items.find((i) => i.key === 'wp_password');
    expect(secretAgain?.value).toBeNull();
    expect(secretAgain?.revealed_at).toEqual(expect.any(String));
    expectError(await live.get(`/v1/intakes/${id}/items/wp_password/secret`), 410, 'gone');

    const done = await live.get<Body>(`/v1/intakes/${id}`);
    expect(done.body.status).toBe('completed');
    expect(done.body.completed_at).toEqual(expect.any(String));
    expect(await events(id)).toEqual(
      expect.arrayContaining([
        'intake.complete',
        'item.approved',
        'item.revision_requested',
        'item.submitted',
      ]),
    );
    const stored = await server.server.services.db.kysely
      .selectFrom('intake_items')
      .select('secret_ciphertext')
      .where('key', '=', 'wp_password')
      .execute();
    expect(JSON.stringify(stored)).not.toContain('hunter2');

    // Archive, then delete: the portal closes, every file goes.
    const usedBefore = ((await live.get<Body>('/v1/usage')).body.storage_bytes as { used: number }).used;
    expect(usedBefore).toBeGreaterThan(logoBytes.length);
    const storageKeys = (
      await server.server.services.db.kysely
        .selectFrom('item_files')
        .select('storage_key')
        .where('intake_id', '=', id)
        .execute()
    ).map((f) => f.storage_key);
    expect(storageKeys).toHaveLength(3);
    for (const key of storageKeys) (await server.server.services.storage.get(key)).destroy();
    expect((await live.post<Body>(`/v1/intakes/${id}/archive`)).body.status).toBe('archived');
    expectError(await portal.get(`/portal/api/${id}`), 410, 'gone');
    expect((await live.delete(`/v1/intakes/${id}`)).status).toBe(204);
    expectError(await portal.get(`/portal/api/${id}`), 404, 'not_found');
    expectError(await live.get(`/v1/intakes/${id}`), 404, 'not_found');
    expect(await events(id)).toEqual([]);
    // The files go by a job enqueued with the deletion: run it now rather than wait for the next poll,
    // and wait for it if the worker's poll loop took it first.
    await server.server.worker.runDue();
    await server.server.worker.whenSettled({ accountId, livemode: true });
    for (const key of storageKeys) await expect(server.server.services.storage.get(key)).rejects.toThrow();
    if (storage === 'local')
      expect(await readdir(join(server.dataDir, 'files', accountId, id)).catch(() => [])).toEqual([]);
    expect(((await live.get<Body>('/v1/usage')).body.storage_bytes as Body).used).toBe(0);
  });

  it('creates intakes from templates', async () => {
    const template = await live.post<Body>('/v1/templates', { name: 'Brand kit', items: ITEMS.slice(0, 3) });
    expect(template.status).toBe(201);
    expect(template.body.id).toMatch(/^tmpl_/);
    const listed = await live.get<{ templates: Body[] }>('/v1/templates');
    expect(listed.body.templates.map((t) => t.id)).toContain(template.body.id);
    const intake = await live.post<Body>('/v1/intakes', {
      project_name: 'From template',
      client: { email: 'c@example.com' },
      template_id: template.body.id,
      send: false,
    });
    expect(intake.status).toBe(201);
    expect(intake.body.status).toBe('draft');
    expect((intake.body.items as Body[]).map((i) => i.key)).toEqual(['logo', 'photos', 'about']);
    expectError(await portal.get(`/portal/api/${intake.body.intake_id as string}`), 404, 'not_found');
    const sent = await live.post<Body>(`/v1/intakes/${intake.body.intake_id as string}/send`);
    expect(sent.body.status).toBe('sent');
    expectError(await live.post(`/v1/intakes/${intake.body.intake_id as string}/send`), 409, 'conflict');
    expectError(await test.get(`/v1/templates/${template.body.id as string}`), 404, 'not_found');
    expectError(
      await live.post('/v1/intakes', {
        project_name: 'x',
        client: { email: 'c@example.com' },
        template_id: 'tmpl_nope',
      }),
      404,
      'not_found',
    );
    expect((await live.delete(`/v1/templates/${template.body.id as string}`)).status).toBe(204);
  });

  it('tells the caller exactly what is wrong with a definition', async () => {
    const make = (items: unknown, extra: Body = {}) =>
      live.post<Body>('/v1/intakes', {
        project_name: 'Bad',
        client: { email: 'c@example.com' },
        items,
        ...extra,
      });
    const cases: [unknown, string][] = [
      [
        [{ key: 'a', label: 'A', type: 'file_list', constraints: { min_count: 3, max_count: 1 } }],
        'items.a.constraints.min_count',
      ],
      [
        [
          { key: 'a', label: 'A', type: 'text' },
          { key: 'a', label: 'B', type: 'text' },
        ],
        'duplicate item key',
      ],
      [[{ key: 'a', label: 'A', type: 'hologram' }], 'unknown type'],
      [[{ key: 'a', label: 'A', type: 'image', constraints: { formats: ['bmpx'] } }], 'unknown format'],
      [[{ key: 'a', label: 'A', type: 'structured', schema: { type: 'objekt' } }], 'items.a.schema'],
    ];
    for (const [items, text] of cases) {
      const answer = await make(items);
      expectError(answer, 422, 'unprocessable');
      expect(answer.body.message).toContain(text);
    }
    const past = await make([{ key: 'a', label: 'A', type: 'text' }], { due_date: '2001-01-01' });
    expectError(past, 422, 'unprocessable');
    expect(past.body.message).toContain('due_date');
    const missing = await live.post<Body>('/v1/intakes', {
      client: { email: 'c@example.com' },
      items: ITEMS,
    });
    expectError(missing, 400, 'invalid_request');
    expect(missing.body.message).toContain('project_name');
    const noItems = await live.post<Body>('/v1/intakes', {
      project_name: 'x',
      client: { email: 'c@example.com' },
    });
    expectError(noItems, 400, 'invalid_request');
    expect(noItems.body.message).toContain('items');
    const unknownField = await make([{ key: 'a', label: 'A', type: 'text', colour: 'red' }]);
    expectError(unknownField, 400, 'invalid_request');
    expect(unknownField.body.message).toContain('colour');
    expectError(await live.get('/v1/intakes?limit=101'), 400, 'invalid_request');
  });

  it('lists, filters and isolates intakes', async () => {
    const other = await server.createAccount();
    const stranger = client(server.url, other.live_key);
    const mine = await live.post<Body>('/v1/intakes', {
      project_name: 'Listed',
      client: { email: 'list@example.com' },
      items: ITEMS,
    });
    const id = mine.body.intake_id as string;
    const list = await live.get<{ total: number; intakes: Body[] }>(
      '/v1/intakes?client_email=list@example.com',
    );
    expect(list.body.total).toBe(1);
    expect(list.body.intakes[0]).toEqual({
      id,
      intake_id: id,
      projectName: 'Listed',
      clientEmail: 'list@example.com',
      status: 'sent',
      createdAt: expect.any(String),
      portal_url: mine.body.portal_url,
      awaiting_review: 0,
    });
    expect(
      (await live.get<{ total: number }>('/v1/intakes?status=archived&client_email=list@example.com')).body
        .total,
    ).toBe(0);
    expect((await live.get<Body>(`/v1/intakes/int_${id.slice(3)}`)).body.id).toBe(id);
    expectError(await stranger.get(`/v1/intakes/${id}`), 404, 'not_found');
    expectError(await stranger.post(`/v1/intakes/${id}/items/logo/approve`), 404, 'not_found');
    expectError(await stranger.delete(`/v1/intakes/${id}`), 404, 'not_found');
    expectError(await test.get(`/v1/intakes/${id}`), 404, 'not_found');
    expect((await test.get<{ total: number }>('/v1/intakes')).body.total).toBe(0);
  });

  it("records the client's time zone from the portal, keeping one the caller set", async () => {
    const make = (client: Body) =>
      live.post<Body>('/v1/intakes', { project_name: 'Zones', client, items: ITEMS.slice(2, 3) });
    const open = (await make({ email: 'tz@example.com' })).body.intake_id as string;
    const fixed = (await make({ email: 'tz2@example.com', timezone: 'America/New_York' })).body
      .intake_id as string;
    for (const id of [open, fixed]) {
      const put = await portal.call('PUT', `/portal/api/${id}/timezone`, {
        body: { timezone: 'Europe/Paris' },
      });
      expect(put.status, put.text).toBe(204);
    }
    expect(((await live.get<Body>(`/v1/intakes/${open}`)).body.client as Body).timezone).toBe('Europe/Paris');
    expect(((await live.get<Body>(`/v1/intakes/${fixed}`)).body.client as Body).timezone).toBe(
      'America/New_York',
    );
    const bad = await portal.call<Body>('PUT', `/portal/api/${open}/timezone`, {
      body: { timezone: 'Mars/Olympus' },
    });
    expectError(bad, 400, 'invalid_request');
    expect(bad.body.message).toContain('timezone');
    expectError(
      await portal.call('PUT', '/portal/api/in_unknown/timezone', { body: { timezone: 'Europe/Paris' } }),
      404,
      'not_found',
    );
  });

  /** One small intake: what the quota tests create on the free plan (five a month). */
  const QUOTA_BODY = {
    project_name: 'q',
    client: { email: 'q@example.com' },
    items: [{ key: 'a', label: 'A', type: 'text' }],
  };

  it('enforces the monthly intake quota in live mode only', async () => {
    const free = await server.createAccount({ plan: 'free' });
    const c = client(server.url, free.live_key);
    const t = client(server.url, free.test_key);
    for (let i = 0; i < 5; i++) expect((await c.post('/v1/intakes', QUOTA_BODY)).status).toBe(201);
    const over = await c.post<Body>('/v1/intakes', QUOTA_BODY);
    expectError(over, 402, 'quota_exceeded');
    expect((await c.get<Body>('/v1/usage')).body.intakes).toEqual({ used: 5, limit: 5 });
    expect((await t.post('/v1/intakes', QUOTA_BODY)).status).toBe(201);
  });

  it('holds the quota when live creations run at once, and a refused one leaves nothing behind', async () => {
    const free = await server.createAccount({ plan: 'free' });
    const c = client(server.url, free.live_key);
    // The quota is counted last in a creation's transaction: eight at once, five of the plan's five pass.
    const answers = await Promise.all(
      Array.from({ length: 8 }, () => c.post<Body>('/v1/intakes', QUOTA_BODY)),
    );
    expect(answers.map((a) => a.status).sort()).toEqual([201, 201, 201, 201, 201, 402, 402, 402]);
    for (const refused of answers.filter((a) => a.status === 402))
      expectError(refused, 402, 'quota_exceeded');
    expect((await c.get<Body>('/v1/usage')).body.intakes).toEqual({ used: 5, limit: 5 });
    const listed = await c.get<Body>('/v1/intakes?limit=100');
    expect(listed.body.total).toBe(5);
    expect(listed.body.intakes).toHaveLength(5);
  });

  // PostgreSQL only (there a row's lock is held until the commit), once per database.
  if (database === 'postgres' && storage === 'local')
    it("counts the month last: a creation waiting for the month's counter has written its intake", async () => {
      const account = await server.createAccount({ plan: 'free' });
      const c = client(server.url, account.live_key);
      expect((await c.post('/v1/intakes', QUOTA_BODY)).status).toBe(201);
      const holder = await connectToPostgres(server.env.DATABASE_URL);
      try {
        // Another transaction holds the account's counter of the month.
        await holder.query('begin');
        await holder.query(
          "select value from usage_counters where account_id = $1 and metric = 'intakes' for update",
          [account.account_id],
        );
        const holderPid = (await holder.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]
          ?.pid;
        const creation = c.post<Body>('/v1/intakes', QUOTA_BODY);
        // The creation's connection, once it waits for that row.
        let waiting: number | undefined;
        for (let tries = 0; waiting === undefined && tries < 200; tries++) {
          const { rows } = await holder.query<{ pid: number }>(
            'select pid from pg_stat_activity where $1 = any(pg_blocking_pids(pid))',
            [holderPid],
          );
          waiting = rows[0]?.pid;
          if (waiting === undefined) await new Promise((resolve) => setTimeout(resolve, 25));
        }
        expect(waiting).toBeDefined();
        // It waits with its intake already written: the counter is its last statement before the commit.
        const { rows: held } = await holder.query<{ relname: string }>(
          `select c.relname from pg_locks l join pg_class c on c.oid = l.relation
            where l.pid = $1 and l.granted and l.mode = 'RowExclusiveLock' and c.relname in ('intakes', 'audit_entries')`,
          [waiting],
        );
        expect(held.map((r) => r.relname).sort()).toEqual(['audit_entries', 'intakes']);
        await holder.query('rollback');
        expect((await creation).status).toBe(201);
      } finally {
        await holder.end();
      }
    });

  it('answers 413 past max_bytes and leaves nothing behind', async () => {
    const intake = await live.post<Body>('/v1/intakes', {
      project_name: 'Sizes',
      client: { email: 's@example.com' },
      items: [{ key: 'doc', label: 'Doc', type: 'file', constraints: { max_bytes: 1000 } }],
    });
    const id = intake.body.intake_id as string;
    const big = await upload(portal, id, 'doc', Buffer.alloc(5000, 65), 'big.txt', 'text/plain');
    expectError(big, 413, 'payload_too_large');
    expect(big.body.message).toContain('max_bytes');
    const tmp = await readdir(join(server.dataDir, 'tmp')).catch(() => []);
    expect(tmp).toEqual([]);
    const ok = await upload(portal, id, 'doc', Buffer.from('hello world'), 'small.txt', 'text/plain');
    expect(ok.status, ok.text).toBe(201);
  });
});
