import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATABASES } from './helpers/env.js';
import { client, type Client } from './helpers/http.js';
import { expectError } from './helpers/security.js';
import { startTestServer, type TestServer } from './helpers/server.js';

type Body = Record<string, unknown>;
interface ResultItem {
  key: string;
  type: string;
  value: unknown;
}

const OPTIONS = [
  { value: 'web', label: 'Website' },
  { value: 'print', label: 'Print' },
  { value: 'social', label: 'Social media' },
];

/** One item of every value type, with the constraints each type takes. */
const ITEMS = [
  { key: 'vat_id', label: 'VAT number', type: 'text', constraints: { pattern: '[A-Z]{2}[0-9]{8,10}' } },
  { key: 'website', label: 'Website', type: 'url' },
  { key: 'billing_email', label: 'Billing email', type: 'email' },
  { key: 'phone', label: 'Phone', type: 'phone' },
  { key: 'launch', label: 'Launch date', type: 'date', constraints: { min_date: '2026-01-01' } },
  { key: 'has_domain', label: 'Do you own a domain?', type: 'boolean' },
  { key: 'pages', label: 'How many pages?', type: 'number', constraints: { min: 1, max: 50, integer: true } },
  { key: 'tier', label: 'Package', type: 'select', options: OPTIONS },
  {
    key: 'channels',
    label: 'Channels',
    type: 'multiselect',
    options: OPTIONS,
    constraints: { min_count: 1, max_count: 2 },
  },
  { key: 'palette', label: 'Brand colours', type: 'color_list', constraints: { min_count: 2, max_count: 4 } },
];

/** A valid answer and a wrong one (with the constraint the 422 must name) per item. */
const ANSWERS: Record<string, { good: unknown; bad: unknown; broken: string }> = {
  vat_id: { good: 'DE123456789', bad: 'de12', broken: 'pattern' },
  website: { good: 'https://example.com', bad: 'ftp://example.com', broken: 'type' },
  billing_email: { good: 'billing@example.com', bad: 'not an email', broken: 'type' },
  phone: { good: '+4930123456', bad: '030 123', broken: 'type' },
  launch: { good: '2026-05-04', bad: '2025-12-31', broken: 'min_date' },
  has_domain: { good: false, bad: 'yes', broken: 'type' },
  pages: { good: 12, bad: 51, broken: 'max' },
  tier: { good: 'print', bad: 'tv', broken: 'options' },
  channels: { good: ['web', 'social'], bad: ['web', 'print', 'social'], broken: 'max_count' },
  palette: { good: ['#1A2B3C', '#fff'], bad: ['red'], broken: 'type' },
};

describe.each(DATABASES)('item types on %s', (database) => {
  let server: TestServer;
  let live: Client;
  let test: Client;
  let portal: Client;

  beforeAll(async () => {
    server = await startTestServer(database);
    const account = await server.createAccount({ plan: 'agency' });
    live = client(server.url, account.live_key);
    test = client(server.url, account.test_key);
    portal = client(server.url);
  });
  afterAll(async () => {
    await server.stop();
  });

  const create = (api: Client, items: unknown[]) =>
    api.post<Body>('/v1/intakes', { project_name: 'Types', client: { email: 'dana@example.com' }, items });

  it('refuses keys that are not snake_case with 422, naming the rule', async () => {
    for (const key of ['Logo', 'logo-2', '2logo', 'brand colour']) {
      const response = await create(live, [{ key, label: 'L', type: 'text' }]);
      expectError(response, 422, 'unprocessable');
      expect(response.body.message).toContain('^[a-z][a-z0-9_]*$');
    }
  });

  it('refuses patterns that need backtracking, and select items without options', async () => {
    const backref = await create(live, [
      { key: 'a', label: 'A', type: 'text', constraints: { pattern: '(a)\\1' } },
    ]);
    expectError(backref, 422, 'unprocessable');
    expect(backref.body.message).toContain('backreferences are not supported');
    const lookahead = await create(live, [
      { key: 'a', label: 'A', type: 'text', constraints: { pattern: '(?=a)a' } },
    ]);
    expect(lookahead.body.message).toContain('lookahead');
    const select = await create(live, [{ key: 'a', label: 'A', type: 'select' }]);
    expect(select.body.message).toContain('select items need options');
  });

  it('checks a catastrophic-looking pattern on a hostile value in linear time', async () => {
    // (a+)+$ takes exponential time on a backtracking engine for "aaaa…!"; here it is a plain 422.
    const created = await create(live, [
      { key: 'a', label: 'A', type: 'text', constraints: { pattern: '(a+)+' } },
    ]);
    expect(created.status).toBe(201);
    const id = created.body.intake_id as string;
    const saved = await portal.call<Body>('PUT', `/portal/api/${id}/items/a`, {
      body: { value: `${'a'.repeat(1999)}!` },
    });
    expectError(saved, 422, 'unprocessable');
    expect(saved.body.message).toBe('a.pattern: value does not have the expected form');
    expect((await portal.call('PUT', `/portal/api/${id}/items/a`, { body: { value: 'aaaa' } })).status).toBe(
      200,
    );
  });

  it('the portal takes a valid answer of every type and refuses a wrong one, naming the constraint', async () => {
    const created = await create(live, ITEMS);
    expect(created.status).toBe(201);
    const id = created.body.intake_id as string;
    for (const [key, answer] of Object.entries(ANSWERS)) {
      const bad = await portal.call<Body>('PUT', `/portal/api/${id}/items/${key}`, {
        body: { value: answer.bad },
      });
      expectError(bad, 422, 'unprocessable');
      expect(bad.body.message, key).toMatch(new RegExp(`^${key}\\.${answer.broken}:`));
      const good = await portal.call<Body>('PUT', `/portal/api/${id}/items/${key}`, {
        body: { value: answer.good },
      });
      expect(good.status, JSON.stringify(good.body)).toBe(200);
      const submitted = await portal.post<Body>(`/portal/api/${id}/items/${key}/submit`);
      expect(submitted.status, JSON.stringify(submitted.body)).toBe(200);
    }
    const results = await live.get<{ items: ResultItem[] }>(`/v1/intakes/${id}/results?include_pending=true`);
    const values = Object.fromEntries(results.body.items.map((i) => [i.key, i.value]));
    // Typed values: numbers, booleans and lists stay JSON types; colours are normalised to lower case.
    expect(values).toEqual({
      vat_id: 'DE123456789',
      website: 'https://example.com',
      billing_email: 'billing@example.com',
      phone: '+4930123456',
      launch: '2026-05-04',
      has_domain: false,
      pages: 12,
      tier: 'print',
      channels: ['web', 'social'],
      palette: ['#1a2b3c', '#fff'],
    });
    const types = Object.fromEntries(results.body.items.map((i) => [i.key, i.type]));
    expect(types).toEqual(Object.fromEntries(ITEMS.map((i) => [i.key, i.type])));
  });

  it('the test-mode client answers every type, the pattern included, so the intake can complete', async () => {
    const created = await create(test, ITEMS);
    const id = created.body.intake_id as string;
    const status = await test.post<{ progress: { outstanding: number } }>(
      `/v1/test_helpers/intakes/${id}/simulate`,
      {
        action: 'submit',
      },
    );
    expect(status.status, JSON.stringify(status.body)).toBe(200);
    expect(status.body.progress.outstanding).toBe(0);
    const results = await test.get<{ items: ResultItem[] }>(`/v1/intakes/${id}/results?include_pending=true`);
    const vat = results.body.items.find((i) => i.key === 'vat_id');
    expect(vat?.value).toMatch(/^[A-Z]{2}[0-9]{8,10}$/);
  });

  it('the portal page renders a control for every new type', async () => {
    const created = await create(live, ITEMS);
    const id = created.body.intake_id as string;
    const page = await portal.get(`/portal/${id}`);
    expect(page.status).toBe(200);
    expect(page.text).toContain('pattern="[A-Z]{2}[0-9]{8,10}"');
    for (const marker of [
      'type="url"',
      'type="email"',
      'type="tel"',
      'type="date"',
      'type="number"',
      'type="checkbox"',
      'type="radio"',
      'placeholder="#1a2b3c"',
    ]) {
      expect(page.text, marker).toContain(marker);
    }
  });
});
