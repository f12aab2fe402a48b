import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATABASES } from './helpers/env.js';
import { client, type Client } from './helpers/http.js';
import { expectError } from './helpers/security.js';
import { startTestServer, type TestServer } from './helpers/server.js';

type Body = Record<string, unknown>;
interface Status {
  status: string;
  progress: { submitted: number; total: number; percent: number };
  items: { key: string; status: string }[];
  client_last_seen: string | null;
}

const HOUR = 3600;
const ITEMS = [
  {
    key: 'logo',
    label: 'Logo',
    type: 'image',
    constraints: { formats: ['png', 'svg'], min_width: 1200, transparent_background: true },
  },
  {
    key: 'docs',
    label: 'Documents',
    type: 'file_list',
    constraints: { formats: ['pdf'], min_count: 2, max_count: 4 },
  },
  {
    key: 'company',
    label: 'Company',
    type: 'structured',
    schema: {
      type: 'object',
      required: ['name', 'employees', 'contact'],
      properties: {
        name: { type: 'string', minLength: 2 },
        employees: { type: 'integer', minimum: 1 },
        contact: {
          type: 'object',
          required: ['email'],
          properties: { email: { type: 'string', format: 'email' } },
        },
      },
    },
  },
  { key: 'tagline', label: 'Tagline', type: 'text', constraints: { max_chars: 40, min_chars: 10 } },
  {
    key: 'plan',
    label: 'Plan',
    type: 'select',
    options: [
      { value: 'basic', label: 'Basic' },
      { value: 'pro', label: 'Pro' },
    ],
  },
  { key: 'api_token', label: 'API token', type: 'secret' },
];

describe.each(DATABASES)('test mode: simulate, test clock, auto-approval and retention on %s', (database) => {
  let server: TestServer;
  let test: Client;
  let live: Client;

  beforeAll(async () => {
    server = await startTestServer(database);
    const account = await server.createAccount({ plan: 'agency' });
    test = client(server.url, account.test_key);
    live = client(server.url, account.live_key);
  });
  afterAll(async () => server.stop());

  async function create(extra: Body = {}): Promise<string> {
    const created = await test.post<Body>('/v1/intakes', {
      project_name: 'Simulated',
      client: { email: 'sim@example.com' },
      items: ITEMS,
      ...extra,
    });
    expect(created.status, created.text).toBe(201);
    return created.body.intake_id as string;
  }

  it('simulates a client who views and submits valid answers for every item', async () => {
    const id = await create();
    const viewed = await test.post<Status>(`/v1/test_helpers/intakes/${id}/simulate`, { action: 'view' });
    expect(viewed.status).toBe(200);
    expect(viewed.body.client_last_seen).toEqual(expect.any(String));
    const submitted = await test.post<Status>(`/v1/test_helpers/intakes/${id}/simulate`, {
      action: 'submit',
    });
    expect(submitted.status, submitted.text).toBe(200);
    expect(submitted.body.items.map((i) => i.status)).toEqual(Array(ITEMS.length).fill('submitted'));
    expect(submitted.body.progress).toMatchObject({ submitted: 6, total: 6, percent: 100 });
    const results = await test.get<{ items: { key: string; value: unknown }[] }>(
      `/v1/intakes/${id}/results?include_pending=true`,
    );
    const values = Object.fromEntries(results.body.items.map((i) => [i.key, i.value]));
    expect((values.logo as { files: { width: number; content_type: string }[] }).files[0]).toMatchObject({
      width: 1200,
      content_type: 'image/png',
    });
    expect((values.docs as { files: unknown[] }).files).toHaveLength(2);
    expect(values.company).toMatchObject({ employees: 1, contact: { email: expect.stringContaining('@') } });
    expect(String(values.tagline).length).toBeGreaterThanOrEqual(10);
    expect(String(values.tagline).length).toBeLessThanOrEqual(40);
    expect(values.plan).toBe('basic');
  });

  it('refuses test helpers to live keys', async () => {
    const liveIntake = await live.post<Body>('/v1/intakes', {
      project_name: 'Live',
      client: { email: 'l@example.com' },
      items: ITEMS,
    });
    expectError(
      await live.post(`/v1/test_helpers/intakes/${liveIntake.body.intake_id as string}/simulate`, {
        action: 'view',
      }),
      403,
      'forbidden',
    );
    expectError(
      await test.post(`/v1/test_helpers/intakes/${liveIntake.body.intake_id as string}/simulate`, {
        action: 'view',
      }),
      404,
      'not_found',
    );
    expectError(
      await test.post('/v1/test_helpers/intakes/in_x/simulate', { action: 'dance' }),
      400,
      'invalid_request',
    );
  });

  it('approves submitted items 72 hours after submission, on the test clock', async () => {
    const id = await create();
    await test.post(`/v1/test_helpers/intakes/${id}/simulate`, { action: 'submit' });
    await test.post('/v1/test_helpers/advance_clock', { seconds: 71 * HOUR });
    const before = await test.get<Status>(`/v1/intakes/${id}/status`);
    expect(before.body.items.every((i) => i.status === 'submitted')).toBe(true);
    const advanced = await test.post<Body>('/v1/test_helpers/advance_clock', { seconds: 2 * HOUR });
    expect(advanced.status).toBe(200);
    const after = await test.get<Status>(`/v1/intakes/${id}/status`);
    expect(after.body.items.map((i) => i.status)).toEqual(Array(ITEMS.length).fill('approved'));
    expect(after.body.status).toBe('completed');
    const approvals = await server.server.services.db.kysely
      .selectFrom('events')
      .select('payload')
      .where('intake_id', '=', id)
      .where('type', '=', 'item.approved')
      .execute();
    expect(approvals).toHaveLength(ITEMS.length);
    expect(approvals.every((e) => (JSON.parse(e.payload) as Body).auto_approved === true)).toBe(true);
  });

  it('purges contents when retention ends, and anonymizes when asked', async () => {
    const id = await create({ retention: { mode: 'days', days: 2, anonymize: true } });
    await test.post(`/v1/test_helpers/intakes/${id}/simulate`, { action: 'submit' });
    for (const item of ITEMS) await test.post(`/v1/intakes/${id}/items/${item.key}/approve`);
    expect((await test.get<Body>(`/v1/intakes/${id}`)).body.status).toBe('completed');
    const usedBefore = ((await test.get<Body>('/v1/usage')).body.storage_bytes as { used: number }).used;
    expect(usedBefore).toBeGreaterThan(0);
    await test.post('/v1/test_helpers/advance_clock', { seconds: 47 * HOUR });
    expect(
      (await test.get<{ items: { value: unknown }[] }>(`/v1/intakes/${id}/results`)).body.items[0]?.value,
    ).not.toBeNull();
    await test.post('/v1/test_helpers/advance_clock', { seconds: 2 * HOUR });
    const purged = await test.get<{ items: { key: string; value: unknown }[] }>(`/v1/intakes/${id}/results`);
    const values = Object.fromEntries(purged.body.items.map((i) => [i.key, i.value]));
    expect(values.logo).toEqual({ files: [] });
    expect(values.company).toBeNull();
    const intake = await test.get<Body>(`/v1/intakes/${id}`);
    expect((intake.body.client as Body).email).toMatch(/^anonymized-[0-9a-f]{12}@invalid$/);
    const usedAfter = ((await test.get<Body>('/v1/usage')).body.storage_bytes as { used: number }).used;
    expect(usedBefore - usedAfter).toBeGreaterThan(0);
    const accountDir = await readdir(join(server.dataDir, 'files')).catch(() => [] as string[]);
    for (const dir of accountDir) {
      expect(await readdir(join(server.dataDir, 'files', dir, id)).catch(() => [])).toEqual([]);
    }
    expectError(await client(server.url).get(`/portal/api/${id}`), 410, 'gone');
  });

  it('purges on_delivery intakes about 24 hours after the results are collected', async () => {
    const id = await create({ retention: { mode: 'on_delivery' } });
    await test.post(`/v1/test_helpers/intakes/${id}/simulate`, { action: 'submit' });
    for (const item of ITEMS) await test.post(`/v1/intakes/${id}/items/${item.key}/approve`);
    await test.post('/v1/test_helpers/advance_clock', { seconds: 30 * 24 * HOUR });
    const kept = await test.get<{ items: { key: string; value: unknown }[] }>(`/v1/intakes/${id}/results`);
    expect(kept.body.items.find((i) => i.key === 'api_token')?.value).toBe('test-secret-value');
    await test.post('/v1/test_helpers/advance_clock', { seconds: 23 * HOUR });
    expect(
      (
        await test.get<{ items: { key: string; value: unknown }[] }>(`/v1/intakes/${id}/results`)
      ).body.items.find((i) => i.key === 'company')?.value,
    ).not.toBeNull();
    await test.post('/v1/test_helpers/advance_clock', { seconds: 2 * HOUR });
    const gone = await test.get<{ items: { key: string; value: unknown }[] }>(`/v1/intakes/${id}/results`);
    expect(gone.body.items.find((i) => i.key === 'company')?.value).toBeNull();
    expect((await test.get<Body>(`/v1/intakes/${id}`)).body.client).toMatchObject({
      email: 'sim@example.com',
    });
  });
});
