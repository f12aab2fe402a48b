import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { itemsOfIntakes, listIntakes } from '../src/modules/intakes/intakes.service.js';
import { DATABASES } from './helpers/env.js';
import { planOf, wholeReads } from './helpers/plans.js';
import { recordStatements } from './helpers/statements.js';
import { client, type Client } from './helpers/http.js';
import { hiddenField, signedInOwner, type SignedInBrowser } from './helpers/signed-in.js';
import { startTestServer, systemWorld, type TestServer } from './helpers/server.js';

/**
 * The dashboard's review routes over HTTP on both databases: the list puts intakes awaiting review
 * first, each action comes back to its item (post/redirect/get), approve-all and reveal go through the
 * API's services and rules, and another account's intake, or a form without its CSRF token, changes
 * nothing.
 */
describe.each(DATABASES)('reviewing in the dashboard on %s', (database) => {
  let server: TestServer;
  let api: Client;
  let owner: SignedInBrowser;
  let stranger: SignedInBrowser;
  let accountId: string;

  beforeAll(async () => {
    server = await startTestServer(database);
    const account = await server.createAccount({ plan: 'agency' });
    api = client(server.url, account.live_key);
    owner = await signedInOwner(server, account.account_id);
    accountId = account.account_id;
    stranger = await signedInOwner(server, (await server.createAccount({ plan: 'agency' })).account_id);
  });
  afterAll(async () => {
    await server.stop();
  });

  async function intakeWithAnswers(name: string, submit: boolean): Promise<string> {
    const created = await api.post<{ intake_id: string }>('/v1/intakes', {
      project_name: name,
      client: { email: 'dana@example.com' },
      items: [
        { key: 'tagline', label: 'Tagline', type: 'text' },
        { key: 'password', label: 'Hosting password', type: 'secret' },
      ],
    });
    expect(created.status, created.text).toBe(201);
    const id = created.body.intake_id;
    if (submit) {
      const portal = client(server.url);
      await portal.call('PUT', `/portal/api/${id}/items/tagline`, { body: { value: 'Fresh daily' } });
      await portal.call('PUT', `/portal/api/${id}/items/password`, { body: { value: 'hunter2' } });
      expect((await portal.post(`/portal/api/${id}/submit`)).status).toBe(200);
    }
    return id;
  }

  async function csrf(as: SignedInBrowser, path: string): Promise<string> {
    return hiddenField(await (await as.get(`${server.url}${path}`)).text(), '_csrf');
  }

  it('lists intakes whose answers wait for review first, marked with how many', async () => {
    const waiting = await intakeWithAnswers('Older, answered', true);
    await intakeWithAnswers('Newer, untouched', false);
    const page = await (await owner.get(`${server.url}/dashboard/intakes`)).text();
    const rows = page.split('<tr>').slice(2);
    expect(rows[0]).toContain(`/dashboard/intakes/${waiting}`);
    expect(rows[0]).toContain('needs review (2)');
    expect(rows[1]).not.toContain('needs review');
  });

  it('pages through "awaiting review first" without gaps or repeats, across the two parts', async () => {
    const account = await server.createAccount({ plan: 'agency' });
    const live = client(server.url, account.live_key);
    const portal = client(server.url);
    const made: { id: string; waiting: boolean }[] = [];
    for (const waiting of [true, false, true, false, false, true, false]) {
      const created = await live.post<{ intake_id: string }>('/v1/intakes', {
        project_name: `P${made.length}`,
        client: { email: 'dana@example.com' },
        items: [{ key: 'tagline', label: 'Tagline', type: 'text' }],
      });
      const id = created.body.intake_id;
      if (waiting) {
        await portal.call('PUT', `/portal/api/${id}/items/tagline`, { body: { value: 'x' } });
        await portal.post(`/portal/api/${id}/submit`);
      }
      made.push({ id, waiting });
    }
    // Newest first as the API lists them (created_at, then id), then those awaiting review in front.
    const listed = await live.get<{ intakes: { id: string }[] }>('/v1/intakes?limit=100');
    const waiting = new Set(made.filter((m) => m.waiting).map((m) => m.id));
    const newestFirst = listed.body.intakes.map((i) => i.id);
    const expected = [
      ...newestFirst.filter((id) => waiting.has(id)),
      ...newestFirst.filter((id) => !waiting.has(id)),
    ];
    const world = systemWorld(server, account.account_id);
    const seen: string[] = [];
    for (let offset = 0; offset < made.length; offset += 2) {
      const page = await listIntakes(server.server.services.db.kysely, world, {
        reviewFirst: true,
        limit: 2,
        offset,
      });
      expect(page.total).toBe(made.length);
      seen.push(...page.rows.map((r) => r.id));
    }
    expect(seen).toEqual(expected);
  });

  it("reads the list's items by their intakes' ids alone, and only the account's", async () => {
    const waiting = await intakeWithAnswers('Items of the list', true);
    const recorder = recordStatements();
    let listed: Response;
    try {
      listed = await owner.get(`${server.url}/dashboard/intakes`);
      expect(await listed.text()).toContain(`/dashboard/intakes/${waiting}`);
    } finally {
      recorder.stop();
    }
    expect(listed.status).toBe(200);
    const reads = recorder.statements.filter((s) => /\bfrom "intake_items"/.test(s.sql));
    expect(reads).toHaveLength(1);
    const [read] = reads;
    if (!read) throw new Error('no read of the items');
    // By the items' own key: a range of the account's items (every one of its intakes') is what a
    // repeated statement's plan on PostgreSQL joined to the page's few, at a cost that grew with them.
    const steps = (await planOf(server.server.services.db.kysely, database, read)).join('\n');
    expect(steps, read.sql).toMatch(/intake_items_pk|sqlite_autoindex_intake_items_1/);
    expect(
      await wholeReads(server.server.services.db.kysely, database, steps.split('\n'), ['intake_items']),
      steps,
    ).toEqual([]);
    const world = (id: string) => systemWorld(server, id);
    const db = server.server.services.db.kysely;
    expect((await itemsOfIntakes(db, world(accountId), [waiting])).map((i) => i.key).sort()).toEqual([
      'password',
      'tagline',
    ]);
    // Another account's intake, or this one's in test mode: none of its items.
    const otherAccount = await server.createAccount({ plan: 'agency' });
    expect(await itemsOfIntakes(db, world(otherAccount.account_id), [waiting])).toEqual([]);
    expect(await itemsOfIntakes(db, { ...world(accountId), livemode: false }, [waiting])).toEqual([]);
  });

  it('comes back to the item after approving it or asking for changes', async () => {
    const id = await intakeWithAnswers('Review routes', true);
    const token = await csrf(owner, `/dashboard/intakes/${id}`);
    const approved = await owner.postForm(`${server.url}/dashboard/intakes/${id}/items/tagline/approve`, {
      _csrf: token,
    });
    expect(approved.status).toBe(303);
    expect(approved.headers.get('location')).toBe(
      `/dashboard/intakes/${id}?notice=approved&item=tagline#item-tagline`,
    );
    const back = await (
      await owner.get(`${server.url}/dashboard/intakes/${id}?notice=approved&item=tagline`)
    ).text();
    const card = back.slice(back.indexOf('id="item-tagline"'), back.indexOf('id="item-password"'));
    expect(card).toContain('Item approved.');
    const revised = await owner.postForm(`${server.url}/dashboard/intakes/${id}/items/tagline/revision`, {
      _csrf: token,
      note: 'Shorter, please.',
    });
    expect(revised.headers.get('location')).toBe(
      `/dashboard/intakes/${id}?notice=revision&item=tagline#item-tagline`,
    );
    const status = await api.get<{ items: { key: string; status: string }[] }>(`/v1/intakes/${id}/status`);
    expect(status.body.items.find((i) => i.key === 'tagline')?.status).toBe('needs_revision');
  });

  it('approves all through the API service, and reveals a secret once (410 after, 422 for a non-secret)', async () => {
    const id = await intakeWithAnswers('Approve all', true);
    const token = await csrf(owner, `/dashboard/intakes/${id}`);
    const all = await owner.postForm(`${server.url}/dashboard/intakes/${id}/approve`, { _csrf: token });
    expect(all.headers.get('location')).toBe(`/dashboard/intakes/${id}?notice=approved_all`);
    const status = await api.get<{ status: string; progress: { awaiting_review: number } }>(
      `/v1/intakes/${id}/status`,
    );
    expect(status.body).toMatchObject({ status: 'completed', progress: { awaiting_review: 0 } });

    const reveal = (key: string) =>
      owner.postForm(`${server.url}/dashboard/intakes/${id}/items/${key}/reveal`, { _csrf: token });
    const first = await reveal('password');
    expect(first.status).toBe(200);
    expect(first.headers.get('cache-control')).toContain('no-store');
    expect(await first.text()).toContain('hunter2');
    const second = await reveal('password');
    expect(second.status).toBe(410);
    expect(await second.text()).not.toContain('hunter2');
    expect((await reveal('tagline')).status).toBe(422);
    // The API's own endpoint follows the same one-time rule: gone after the dashboard's reveal.
    expect((await api.get(`/v1/intakes/${id}/items/password/secret`)).status).toBe(410);
    const audit = await api.get<{ entries: { action: string; actor: { type: string } }[] }>(
      '/v1/audit?limit=20',
    );
    expect(
      audit.body.entries.filter((e) => e.action === 'intake.secret_reveal').map((e) => e.actor.type),
    ).toEqual(['user']);
  });

  it('names who acted in the history: the client, a person, an API key by its name', async () => {
    const id = await intakeWithAnswers('History', true);
    expect((await api.post(`/v1/intakes/${id}/items/tagline/approve`, {})).status).toBe(200);
    const token = await csrf(owner, `/dashboard/intakes/${id}`);
    await owner.postForm(`${server.url}/dashboard/intakes/${id}/items/password/approve`, { _csrf: token });
    const page = await (await owner.get(`${server.url}/dashboard/intakes/${id}`)).text();
    const history = page.slice(page.indexOf('id="history"'));
    expect(history).toMatch(/<strong>Tagline<\/strong>: approved <span class="muted">· API key “[^”]+”/);
    expect(history).toMatch(
      /<strong>Hosting password<\/strong>: approved <span class="muted">· owner-[a-z0-9]+@example\.com/,
    );
    expect(history).toMatch(
      /<strong>Tagline, Hosting password<\/strong>: sent in <span class="muted">· dana@example\.com/,
    );
  });

  it("refuses another account's intake (404) and a form without its CSRF token (403), changing nothing", async () => {
    const id = await intakeWithAnswers('Not yours', true);
    const theirs = await csrf(stranger, '/dashboard/intakes');
    for (const path of ['approve', 'items/tagline/approve', 'items/password/reveal']) {
      const answer = await stranger.postForm(`${server.url}/dashboard/intakes/${id}/${path}`, {
        _csrf: theirs,
      });
      expect(answer.status, path).toBe(404);
    }
    const noToken = await owner.postForm(`${server.url}/dashboard/intakes/${id}/approve`, {});
    expect(noToken.status).toBe(403);
    const status = await api.get<{ progress: { awaiting_review: number } }>(`/v1/intakes/${id}/status`);
    expect(status.body.progress.awaiting_review).toBe(2);
    expect((await api.get<{ value: string }>(`/v1/intakes/${id}/items/password/secret`)).body.value).toBe(
      'hunter2',
    );
  });
});
