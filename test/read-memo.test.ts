import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATABASES } from './helpers/env.js';
import { client, type Client } from './helpers/http.js';
import { expectError } from './helpers/security.js';
import { fromAnotherConnection, startTestServer, type TestServer } from './helpers/server.js';

/**
 * Answers kept between commits (src/http/read-memo.ts: intakes, their list and status, the account): repeated
 * reads answer the same, and every change shows in the very next read, whether this process made it
 * or another connection did; a kept answer never reaches another account, the other mode or a key
 * without the route's scope.
 */

interface StatusBody {
  status: string;
  due_date: string | null;
  progress: { submitted: number; total: number };
  items: { key: string; status: string }[];
}

const ITEMS = [
  { key: 'about', label: 'About you', type: 'longtext' },
  { key: 'motto', label: 'Motto', type: 'longtext' },
];

describe.each(DATABASES)('answers kept between commits (%s)', (database) => {
  let server: TestServer;
  let api: Client;
  let testApi: Client;
  let other: Client;
  let writeOnly: Client;
  let portal: Client;
  let intakeId: string;

  beforeAll(async () => {
    server = await startTestServer(database);
    const account = await server.createAccount();
    api = client(server.url, account.live_key);
    testApi = client(server.url, account.test_key);
    other = client(server.url, (await server.createAccount()).live_key);
    const key = await api.post<{ key: string }>('/v1/keys', {
      name: 'writer',
      mode: 'live',
      scopes: ['intakes:write'],
    });
    expect(key.status, key.text).toBe(201);
    writeOnly = client(server.url, key.body.key);
    portal = client(server.url);
    const created = await api.post<{ intake_id: string }>('/v1/intakes', {
      project_name: 'Memo',
      client: { email: 'client@example.com' },
      items: ITEMS,
    });
    expect(created.status, created.text).toBe(201);
    intakeId = created.body.intake_id;
  });

  afterAll(async () => {
    await server.stop();
  });

  const status = () => api.get<StatusBody>(`/v1/intakes/${intakeId}/status`);

  it('answers repeated reads alike, as JSON', async () => {
    const first = await status();
    const second = await status();
    expect(first.status).toBe(200);
    expect(second.text).toBe(first.text);
    expect(second.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(second.body.progress).toEqual({
      submitted: 0,
      total: 2,
      outstanding: 2,
      percent: 0,
      awaiting_review: 0,
    });
  });

  it("shows this process's change in the very next read", async () => {
    expect((await status()).body.items.map((i) => i.status)).toEqual(['pending', 'pending']);
    const saved = await portal.call('PUT', `/portal/api/${intakeId}/items/about`, {
      body: { value: 'We make bread.' },
    });
    expect(saved.status, saved.text).toBe(200);
    const submitted = await portal.post(`/portal/api/${intakeId}/items/about/submit`);
    expect(submitted.status, submitted.text).toBe(200);

    const after = await status();
    expect(after.body.status).toBe('in_progress');
    expect(after.body.items.find((i) => i.key === 'about')?.status).toBe('submitted');
    expect(after.body.progress.submitted).toBe(1);
  });

  it("shows another connection's commit in the very next read", async () => {
    expect((await status()).body.due_date).toBeNull();
    await fromAnotherConnection(
      server,
      sql`update intakes set due_date = '2031-01-31' where id = ${intakeId}`,
    );
    expect((await status()).body.due_date).toBe('2031-01-31');
  });

  it('never answers another account, the other mode or a key without the scope from a kept answer', async () => {
    expect((await status()).status).toBe(200);
    expectError(await other.get(`/v1/intakes/${intakeId}/status`), 404, 'not_found');
    expectError(await testApi.get(`/v1/intakes/${intakeId}/status`), 404, 'not_found');
    expectError(await writeOnly.get(`/v1/intakes/${intakeId}/status`), 403, 'forbidden');
    // An unknown id is never kept, and the alias of the id answers the same intake.
    expectError(await api.get(`/v1/intakes/in_${'x'.repeat(22)}/status`), 404, 'not_found');
    const alias = await api.get<StatusBody>(`/v1/intakes/${intakeId.replace(/^in_/, 'int_')}/status`);
    expect(alias.text).toBe((await status()).text);
  });

  it('answers HEAD without a body and still counts kept answers against the rate limit', async () => {
    const head = await api.call('HEAD', `/v1/intakes/${intakeId}/status`);
    expect(head.status).toBe(200);
    expect(head.text).toBe('');
    expect((await status()).status).toBe(200);

    const limited = await server.createAccount({ rateLimitPerHour: 4 });
    const poller = client(server.url, limited.live_key);
    const created = await poller.post<{ intake_id: string }>('/v1/intakes', {
      project_name: 'Limited',
      client: { email: 'client@example.com' },
      items: ITEMS,
    });
    expect(created.status, created.text).toBe(201);
    const path = `/v1/intakes/${created.body.intake_id}/status`;
    const reads = [await poller.get(path), await poller.get(path), await poller.get(path)];
    expect(reads.map((r) => r.status)).toEqual([200, 200, 200]);
    expect(reads[2]?.headers.get('x-ratelimit-remaining')).toBe('0');
    expectError(await poller.get(path), 429, 'rate_limited');
  });

  it('shows a change in the next read of the intake and of the list, each query kept apart', async () => {
    interface ListBody {
      total: number;
      intakes: { id: string; projectName: string; status: string }[];
    }
    const intake = () =>
      api.get<{ project_name: string; status: string; items: unknown[] }>(`/v1/intakes/${intakeId}`);
    const list = (query = '') => api.get<ListBody>(`/v1/intakes${query}`);
    const before = await intake();
    expect(before.status, before.text).toBe(200);
    expect((await intake()).text).toBe(before.text);
    const listed = await list();
    const draftsBefore = await list('?status=draft');
    expect(listed.body.intakes.map((i) => i.id)).toContain(intakeId);

    const added = await api.post(`/v1/intakes/${intakeId}/items`, {
      items: [{ key: 'slogan', label: 'Slogan', type: 'longtext' }],
    });
    expect(added.status, added.text).toBe(201);
    expect((await intake()).body.items).toHaveLength(before.body.items.length + 1);

    const created = await api.post<{ intake_id: string }>('/v1/intakes', {
      project_name: 'Second',
      client: { email: 'second@example.com' },
      items: ITEMS,
      send: false,
    });
    expect(created.status, created.text).toBe(201);
    const after = await list();
    expect(after.body.total).toBe(listed.body.total + 1);
    expect(after.body.intakes.map((i) => i.id)).toContain(created.body.intake_id);
    // Another query is its own answer: the drafts now include the unsent intake.
    const drafts = await list('?status=draft');
    expect(drafts.body.total).toBe(draftsBefore.body.total + 1);
    expect(drafts.body.intakes.every((i) => i.status === 'draft')).toBe(true);

    // Another connection's rename shows in both reads at once.
    await fromAnotherConnection(
      server,
      sql`update intakes set project_name = 'Renamed' where id = ${intakeId}`,
    );
    expect((await intake()).body.project_name).toBe('Renamed');
    expect((await list()).body.intakes.find((i) => i.id === intakeId)?.projectName).toBe('Renamed');
    expectError(await other.get(`/v1/intakes/${intakeId}`), 404, 'not_found');
    expect((await other.get<ListBody>('/v1/intakes')).body.intakes.map((i) => i.id)).not.toContain(intakeId);
    expect((await testApi.get<ListBody>('/v1/intakes')).body.total).toBe(0);
  });

  it('tags each kept answer and answers 304 to a poll that holds the current tag', async () => {
    const first = await status();
    const etag = first.headers.get('etag') ?? '';
    expect(etag).toMatch(/^"[A-Za-z0-9_-]{22}"$/);
    expect((await status()).headers.get('etag')).toBe(etag);

    const poll = (tag: string, caller: Client = api) =>
      caller.get(`/v1/intakes/${intakeId}/status`, { headers: { 'if-none-match': tag } });
    const unchanged = await poll(etag);
    expect(unchanged.status).toBe(304);
    expect(unchanged.text).toBe('');
    expect(unchanged.headers.get('etag')).toBe(etag);
    expect(unchanged.headers.get('x-ratelimit-remaining')).not.toBeNull();
    expect((await poll(`W/${etag}`)).status).toBe(304);
    expect((await poll(`"elsewhere", ${etag}`)).status).toBe(304);
    expect((await poll('"elsewhere"')).status).toBe(200);

    // A commit that leaves this answer as it was (another intake) keeps the tag: still 304.
    const created = await api.post('/v1/intakes', {
      project_name: 'Unrelated',
      client: { email: 'other@example.com' },
      items: ITEMS,
      send: false,
    });
    expect(created.status, created.text).toBe(201);
    expect((await poll(etag)).status).toBe(304);

    // A change to the answer: the old tag gets the new answer, with a new tag, at once.
    await fromAnotherConnection(
      server,
      sql`update intakes set due_date = '2032-02-29' where id = ${intakeId}`,
    );
    const changed = await poll(etag);
    expect(changed.status).toBe(200);
    expect((changed.body as { due_date: string }).due_date).toBe('2032-02-29');
    const newTag = changed.headers.get('etag') ?? '';
    expect(newTag).not.toBe(etag);
    expect((await poll(newTag)).status).toBe(304);

    // The tag opens nothing: another account, the other mode and a key without the scope answer as
    // they would without it.
    expectError(await poll(newTag, other), 404, 'not_found');
    expectError(await poll(newTag, testApi), 404, 'not_found');
    expectError(await poll(newTag, writeOnly), 403, 'forbidden');
    expectError(await poll('*', other), 404, 'not_found');
  });

  it('tags the account, the intake and the list, each answering 304 to its own tag only', async () => {
    const paths = ['/v1/account', `/v1/intakes/${intakeId}`, '/v1/intakes'];
    const tags: string[] = [];
    for (const path of paths) {
      const read = await api.get(path);
      expect(read.status, read.text).toBe(200);
      const tag = read.headers.get('etag') ?? '';
      expect(tag).not.toBe('');
      tags.push(tag);
      expect((await api.get(path, { headers: { 'if-none-match': tag } })).status).toBe(304);
    }
    expect(new Set(tags).size).toBe(paths.length);
    // The account's tag does not fit the other account's account answer.
    expect((await other.get('/v1/account', { headers: { 'if-none-match': tags[0] ?? '' } })).status).toBe(
      200,
    );
  });

  it('keeps the account answer per mode and shows an update in the next read', async () => {
    const live = await api.get<{ name: string; livemode: boolean }>('/v1/account');
    const test = await testApi.get<{ name: string; livemode: boolean }>('/v1/account');
    expect(live.body.livemode).toBe(true);
    expect(test.body.livemode).toBe(false);
    expect((await api.get('/v1/account')).text).toBe(live.text);

    const renamed = await api.patch('/v1/account', { name: 'Renamed Bakery' });
    expect(renamed.status, renamed.text).toBe(200);
    expect((await api.get<{ name: string }>('/v1/account')).body.name).toBe('Renamed Bakery');
    expect((await testApi.get<{ name: string }>('/v1/account')).body.name).toBe('Renamed Bakery');
    const otherAccount = await other.get<{ name: string }>('/v1/account');
    expect(otherAccount.body.name).not.toBe('Renamed Bakery');
  });
});
