import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATABASES } from './helpers/env.js';
import { startSmtpServer } from './helpers/mail.js';
import { client, type Client } from './helpers/http.js';
import { answer, startReceiver, type Receiver } from './helpers/receivers.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { hiddenField, signedInAs, signedInOwner, type SignedInBrowser } from './helpers/signed-in.js';

/**
 * Richer requests through the API and the portal's JSON API, on both databases: sections, an item
 * shown only when an earlier answer makes it apply (completion, progress, reminders and results
 * follow the one rule), refused conditions, and the conversation on items with its emails and
 * webhook event.
 */
const ITEMS = [
  { key: 'company', label: 'Company name', type: 'text', section: 'About you' },
  { key: 'has_logo', label: 'Do you have a logo?', type: 'boolean', section: 'Brand' },
  {
    key: 'logo_link',
    label: 'Link to your logo',
    type: 'url',
    section: 'Brand',
    show_if: { item_key: 'has_logo', equals: true },
  },
  { key: 'notes', label: 'Anything else', type: 'longtext', section: 'Access', required: false },
];

type Body = Record<string, unknown>;
interface Chase {
  status: string;
}
interface OutboxMessage {
  to: string;
  subject: string | null;
  text: string;
  html: string | null;
}

describe.each(DATABASES)('sections, conditional items and comments on %s', (database) => {
  let server: TestServer;
  let hooks: Receiver;
  let smtp: Awaited<ReturnType<typeof startSmtpServer>>;
  let api: Client;
  let other: Client;
  let live: Client;
  let ownerEmail: string;
  let testKey: string;
  let accountId: string;
  let strangerId: string;
  const portal = () => client(server.url);

  beforeAll(async () => {
    smtp = await startSmtpServer();
    server = await startTestServer(database, { SMTP_URL: smtp.url });
    hooks = await startReceiver(answer(200));
    const created = await server.createAccount({ plan: 'agency' });
    api = client(server.url, created.test_key);
    testKey = created.test_key;
    const stranger = await server.createAccount();
    other = client(server.url, stranger.test_key);
    strangerId = stranger.account_id;
    accountId = created.account_id;
    live = client(server.url, created.live_key);
    ownerEmail = (await live.get<Body>('/v1/account')).body.email as string;
    const hook = await api.post('/v1/webhooks', { url: hooks.url, events: ['comment.created'] });
    expect(hook.status, hook.text).toBe(201);
  });
  afterAll(async () => {
    await server.stop();
    await hooks.close();
    await smtp.close();
  });

  async function createIntake(): Promise<string> {
    const created = await api.post<Body>('/v1/intakes', {
      project_name: 'Harbour relaunch',
      client: { email: `c-${Math.random().toString(36).slice(2)}@example.test`, name: 'Dana' },
      items: ITEMS,
    });
    expect(created.status, created.text).toBe(201);
    return created.body.intake_id as string;
  }

  async function save(id: string, key: string, value: unknown) {
    const saved = await portal().call('PUT', `/portal/api/${id}/items/${key}`, { body: { value } });
    expect(saved.status, saved.text).toBe(200);
  }

  const view = async (id: string) =>
    (await portal().get<{ items: { key: string; section: string }[] }>(`/portal/api/${id}`)).body;
  const status = async (id: string) =>
    (
      await api.get<{ status: string; progress: { total: number }; chases: Chase[] }>(
        `/v1/intakes/${id}/status`,
      )
    ).body;

  async function outbox(to: string): Promise<OutboxMessage[]> {
    const got = await api.get<{ messages: OutboxMessage[] }>('/v1/test_helpers/outbox');
    expect(got.status, got.text).toBe(200);
    return got.body.messages.filter((m) => m.to === to);
  }

  const advance = async (seconds: number) => {
    const moved = await api.post('/v1/test_helpers/advance_clock', { seconds });
    expect(moved.status, moved.text).toBe(200);
  };

  it('keeps sections on the definitions and hides an item until its condition holds', async () => {
    const id = await createIntake();
    const intake = await api.get<{ items: { key: string; section: string | null; show_if: unknown }[] }>(
      `/v1/intakes/${id}`,
    );
    expect(intake.body.items.map((i) => i.section)).toEqual(['About you', 'Brand', 'Brand', 'Access']);
    expect(intake.body.items[2]?.show_if).toEqual({ item_key: 'has_logo', equals: true });
    expect((await view(id)).items.map((i) => [i.key, i.section])).toEqual([
      ['company', 'About you'],
      ['has_logo', 'Brand'],
      ['notes', 'Access'],
    ]);
    await save(id, 'has_logo', true);
    expect((await view(id)).items.map((i) => i.key)).toEqual(['company', 'has_logo', 'logo_link', 'notes']);
  });

  it('answering "no" completes the intake without the hidden item, which is absent from results', async () => {
    const id = await createIntake();
    await save(id, 'company', 'Harbour Ltd');
    await save(id, 'has_logo', false);
    const sent = await portal().post<{ submitted: string[]; still_needed: string[] }>(
      `/portal/api/${id}/submit`,
    );
    expect(sent.body).toMatchObject({ submitted: ['company', 'has_logo'], still_needed: [] });
    expect((await status(id)).progress.total).toBe(3);
    const approved = await api.post<Body>(`/v1/intakes/${id}/approve`, {});
    expect(approved.status, approved.text).toBe(200);
    expect(approved.body.status).toBe('completed');
    const results = await api.get<{ items: { key: string }[] }>(`/v1/intakes/${id}/results`);
    expect(results.body.items.map((i) => i.key)).toEqual(['company', 'has_logo']);
  });

  it('changing the answer to "yes" makes the item needed again and plans a reminder again', async () => {
    const id = await createIntake();
    expect((await status(id)).chases.filter((c) => c.status === 'scheduled')).toHaveLength(1);
    await save(id, 'company', 'Harbour Ltd');
    await save(id, 'has_logo', false);
    await portal().post(`/portal/api/${id}/submit`);
    // Nothing is owed: the pending reminder is called off.
    expect((await status(id)).chases.filter((c) => c.status === 'scheduled')).toHaveLength(0);

    await save(id, 'has_logo', true);
    const after = await status(id);
    expect(after.progress.total).toBe(4);
    expect(after.chases.filter((c) => c.status === 'scheduled')).toHaveLength(1);
    const sent = await portal().post<{ still_needed: string[] }>(`/portal/api/${id}/submit`);
    expect(sent.body.still_needed).toEqual(['logo_link']);
  });

  it('refuses conditions on an unknown or later item, a cycle, or a value the item cannot have (422 naming it)', async () => {
    const refused = async (items: Body[], expected: string) => {
      const answerOf = await api.post<{ message: string }>('/v1/intakes', {
        project_name: 'x',
        client: { email: 'x@example.test' },
        items,
      });
      expect(answerOf.status, answerOf.text).toBe(422);
      expect(answerOf.body.message).toContain(expected);
    };
    const yesNo = { key: 'has_logo', label: 'Logo?', type: 'boolean' };
    const logo = (show_if: Body) => ({ key: 'logo', label: 'Logo', type: 'url', show_if });
    await refused(
      [logo({ item_key: 'nope', equals: true }), yesNo],
      'items.logo.show_if.item_key: refers to unknown item',
    );
    await refused(
      [logo({ item_key: 'has_logo', equals: true }), yesNo],
      'items.logo.show_if.item_key: refers to "has_logo", which comes later',
    );
    await refused(
      [
        { key: 'a', label: 'A', type: 'text', show_if: { item_key: 'b', answered: true } },
        { key: 'b', label: 'B', type: 'text', show_if: { item_key: 'a', answered: true } },
      ],
      'conditions form a cycle',
    );
    await refused([yesNo, logo({ item_key: 'has_logo', equals: 'yes' })], 'items.logo.show_if.equals');

    // An edit that would break a condition is refused too, and so is deleting the item it depends on.
    const id = await createIntake();
    const patched = await api.patch(`/v1/intakes/${id}/items/logo_link`, {
      show_if: { item_key: 'notes', answered: true },
    });
    expect(patched.status, patched.text).toBe(422);
    const deleted = await api.call('DELETE', `/v1/intakes/${id}/items/has_logo`);
    expect(deleted.status, deleted.text).toBe(409);
  });

  it('owner and client talk about an item: batched email to the client, notification and webhook for the owner', async () => {
    const id = await createIntake();
    const clientEmail = (await api.get<{ client: { email: string } }>(`/v1/intakes/${id}`)).body.client.email;
    const first = await api.post<Body>(`/v1/intakes/${id}/items/company/comments`, {
      body: 'Is this the registered name? <b>Exactly</b> as on invoices, please.',
    });
    expect(first.status, first.text).toBe(201);
    expect(first.body).toMatchObject({ item_key: 'company', author: 'owner' });
    expect(first.body.id).toMatch(/^cmt_/);
    // Who wrote it on the owner's side: the API key, by its id and name.
    const keys = await live.get<{ keys: { id: string; name: string; prefix: string }[] }>('/v1/keys');
    const key = keys.body.keys.find((k) => testKey.startsWith(k.prefix));
    expect(first.body.actor).toEqual({ type: 'api_key', id: key?.id, name: key?.name });
    await api.post(`/v1/intakes/${id}/items/has_logo/comments`, { body: 'A vector file would be ideal.' });

    // One email for both, after the short window, with the portal link; the markup arrives escaped.
    expect(await outbox(clientEmail)).toHaveLength(1); // the invitation
    await advance(6 * 60);
    const mails = (await outbox(clientEmail)).filter((m) => m.subject?.includes('A message from'));
    expect(mails).toHaveLength(1);
    expect(mails[0]?.text).toContain('Is this the registered name? <b>Exactly</b>');
    expect(mails[0]?.text).toContain('A vector file would be ideal.');
    expect(mails[0]?.text).toContain(`/portal/${id}`);
    expect(mails[0]?.html).toContain('&lt;b&gt;Exactly&lt;/b&gt;');
    expect(mails[0]?.html).not.toContain('<b>Exactly</b>');
    // The reminders' opt-out, as in every email to the client (it stops these emails too).
    expect(mails[0]?.text).toMatch(new RegExp(`Stop reminders and messages here: \\S+/optout/${id}\\?sig=`));
    expect(mails[0]?.html).toContain('Stop these emails');

    const reply = await portal().post<Body>(`/portal/api/${id}/items/company/comments`, {
      body: 'Yes: Harbour Ltd.',
    });
    expect(reply.status, reply.text).toBe(201);
    expect(reply.body).toMatchObject({ author: 'client', body: 'Yes: Harbour Ltd.' });
    expect(reply.body).not.toHaveProperty('actor');
    const [delivery] = await hooks.waitFor(1);
    expect(JSON.parse(delivery?.body ?? '{}')).toMatchObject({
      event: 'comment.created',
      intake_id: id,
      comment_id: reply.body.id,
      item_key: 'company',
      author: 'client',
      body: 'Yes: Harbour Ltd.',
    });
    await advance(61);
    const notices = (await outbox(ownerEmail)).filter((m) => m.subject?.includes('Dana commented'));
    expect(notices).toHaveLength(1);
    expect(notices[0]?.text).toContain('Yes: Harbour Ltd.');

    // Both sides in the client's view and in the list, oldest first and paged.
    const seen = (await portal().get<{ comments: Body[] }>(`/portal/api/${id}`)).body.comments;
    expect(seen.map((c) => c.author)).toEqual(['owner', 'owner', 'client']);
    // The client never learns which key or person wrote on the owner's side.
    expect(seen.some((c) => 'actor' in c)).toBe(false);
    const page = await api.get<{ comments: Body[]; has_more: boolean }>(`/v1/intakes/${id}/comments?limit=2`);
    expect(page.body.has_more).toBe(true);
    const rest = await api.get<{ comments: Body[]; has_more: boolean }>(
      `/v1/intakes/${id}/comments?limit=2&starting_after=${String(page.body.comments[1]?.id)}`,
    );
    expect(rest.body).toMatchObject({
      has_more: false,
      comments: [{ author: 'client', actor: { type: 'client', id: null, name: null } }],
    });

    // Results carry each item's conversation with its answer (the agent tool's result is the same).
    await save(id, 'company', 'Harbour Ltd.');
    const submitted = await portal().post(`/portal/api/${id}/items/company/submit`);
    expect(submitted.status, submitted.text).toBe(200);
    const results = await api.get<{ items: { key: string; comments: Body[] }[] }>(
      `/v1/intakes/${id}/results?include_pending=true`,
    );
    expect(results.status, results.text).toBe(200);
    const company = results.body.items.find((i) => i.key === 'company');
    expect(company?.comments.map((c) => [c.author, c.body])).toEqual([
      ['owner', 'Is this the registered name? <b>Exactly</b> as on invoices, please.'],
      ['client', 'Yes: Harbour Ltd.'],
    ]);
    expect(company?.comments[0]?.actor).toMatchObject({ type: 'api_key', id: key?.id });
  });

  it('the dashboard shows sections, marks the item not needed and carries the conversation; a viewer may not write', async () => {
    const created = await live.post<Body>('/v1/intakes', {
      project_name: 'Harbour dashboard',
      client: { email: 'dana-dash@example.test', name: 'Dana' },
      items: ITEMS,
    });
    expect(created.status, created.text).toBe(201);
    const id = created.body.intake_id as string;
    await save(id, 'has_logo', false);
    const said = await portal().post<Body>(`/portal/api/${id}/items/company/comments`, {
      body: 'Is it <i>Harbour Ltd</i> or the trading name?',
    });
    expect(said.status, said.text).toBe(201);

    const owner: SignedInBrowser = await signedInOwner(server, accountId);
    const pageUrl = `${server.url}/dashboard/intakes/${id}`;
    const page = await (await owner.get(pageUrl)).text();
    // Sections as headings over their items, with their progress; the items a level below.
    expect([...page.matchAll(/<h3 id="section-\d+">([^<]+)<\/h3>/g)].map((m) => m[1])).toEqual([
      'About you',
      'Brand',
      'Access',
    ]);
    // "No" leaves the logo's link unasked: the Brand section counts one item, not two.
    expect(page.match(/0 of 1 done/g)).toHaveLength(3);
    expect(page).toMatch(/<h4 class="item-title" id="item-logo_link-title"/);
    // The item "no" leaves unasked is shown, and says why.
    expect(page).toContain('Not needed: asked only when “Do you have a logo?” is Yes');
    // The client's comment, escaped, by name.
    const thread = page.slice(page.indexOf('id="thread-company"'));
    expect(thread).toContain('Dana (client)');
    expect(thread).toContain('Is it &lt;i&gt;Harbour Ltd&lt;/i&gt; or the trading name?');

    const csrf = hiddenField(page, '_csrf');
    const posted = await owner.postForm(`${pageUrl}/items/company/comments`, {
      _csrf: csrf,
      body: 'The registered name, please.',
    });
    expect(posted.status).toBe(303);
    expect(posted.headers.get('location')).toMatch(/#item-company$/);
    const listed = await live.get<{ comments: Body[] }>(`/v1/intakes/${id}/comments?item_key=company`);
    const person = await server.server.services.db.kysely
      .selectFrom('account_users')
      .select(['id', 'name', 'email'])
      .where('id', '=', owner.userId)
      .executeTakeFirstOrThrow();
    expect(listed.body.comments.at(-1)).toMatchObject({
      author: 'owner',
      body: 'The registered name, please.',
      actor: { type: 'user', id: owner.userId, name: person.name ?? person.email },
    });
    const audit = await live.get<{ entries: { action: string; resource_id: string; actor: Body }[] }>(
      '/v1/audit?limit=5',
    );
    expect(audit.body.entries.find((e) => e.action === 'comment.create')).toMatchObject({
      resource_id: listed.body.comments.at(-1)?.id,
      actor: { type: 'user', id: owner.userId },
    });
    const after = await (await owner.get(pageUrl)).text();
    expect(after.slice(after.indexOf('id="thread-company"'))).toContain('The registered name, please.');
    // The client reads the reply on their page, under the account's name.
    const portalPage = await (await fetch(`${server.url}/portal/${id}`)).text();
    expect(portalPage).toContain('The registered name, please.');

    // Refused: an empty comment (400), a viewer (403, and no form shown), another account (404).
    expect(
      (await owner.postForm(`${pageUrl}/items/company/comments`, { _csrf: csrf, body: ' ' })).status,
    ).toBe(400);
    const invited = await live.post<Body>('/v1/members', { email: 'viewer@example.test', role: 'viewer' });
    expect(invited.status, invited.text).toBe(201);
    const viewer = await signedInAs(server, accountId, invited.body.id as string);
    const viewerPage = await (await viewer.get(pageUrl)).text();
    expect(viewerPage).toContain('Dana (client)');
    expect(viewerPage).not.toContain('name="body"');
    const viewerPost = await viewer.postForm(`${pageUrl}/items/company/comments`, {
      _csrf: hiddenField(viewerPage, '_csrf'),
      body: 'Viewers cannot say this.',
    });
    expect(viewerPost.status).toBe(403);
    const stranger = await signedInOwner(server, strangerId);
    const strangerPage = await (await stranger.get(`${server.url}/dashboard/intakes`)).text();
    const strangerPost = await stranger.postForm(`${pageUrl}/items/company/comments`, {
      _csrf: hiddenField(strangerPage, '_csrf'),
      body: 'Not my intake.',
    });
    expect(strangerPost.status).toBe(404);
    const final = await live.get<{ comments: Body[] }>(`/v1/intakes/${id}/comments`);
    expect(final.body.comments.map((c) => c.body)).toEqual([
      'Is it <i>Harbour Ltd</i> or the trading name?',
      'The registered name, please.',
    ]);
  });

  it('a live comment email carries the one-click opt-out header, like reminders', async () => {
    const clientEmail = 'dana-live@example.test';
    const created = await live.post<Body>('/v1/intakes', {
      project_name: 'Harbour live',
      client: { email: clientEmail, name: 'Dana' },
      items: ITEMS,
    });
    expect(created.status, created.text).toBe(201);
    const id = created.body.intake_id as string;
    await smtp.waitFor(clientEmail); // the invitation
    expect(
      (await live.post(`/v1/intakes/${id}/items/company/comments`, { body: 'Legal name?' })).status,
    ).toBe(201);
    // The batch waits five minutes of real time: run its job now.
    const job = await server.server.services.db.kysely
      .selectFrom('jobs')
      .select('id')
      .where('kind', '=', 'client_comment_email')
      .where('subject_id', '=', id)
      .executeTakeFirstOrThrow();
    await server.server.services.jobs.runNow([job.id]);
    const mail = (await smtp.waitFor(clientEmail, 2)).find((m) =>
      m.parsed.subject?.includes('A message from'),
    );
    expect(mail?.parsed.text).toContain('Legal name?');
    // mailparser files the List-Unsubscribe header under "list".
    const list = mail?.parsed.headers.get('list') as { unsubscribe?: { url?: string } } | undefined;
    expect(list?.unsubscribe?.url).toMatch(new RegExp(`/optout/${id}\\?sig=[0-9a-f]+$`));
    expect(mail?.raw).toContain('List-Unsubscribe-Post: List-Unsubscribe=One-Click');
  });

  it("the client's view leaves out the conversation on a decision (an owner item)", async () => {
    const created = await api.post<Body>('/v1/intakes', {
      project_name: 'Harbour decisions',
      client: { email: 'dana-decisions@example.test', name: 'Dana' },
      items: [
        { key: 'company', label: 'Company name', type: 'text' },
        {
          key: 'tier',
          label: 'Hosting tier',
          type: 'select',
          assignee: 'owner',
          options: [
            { value: 'basic', label: 'Basic' },
            { value: 'pro', label: 'Pro' },
          ],
        },
      ],
    });
    expect(created.status, created.text).toBe(201);
    const id = created.body.intake_id as string;
    for (const key of ['tier', 'company']) {
      const said = await api.post(`/v1/intakes/${id}/items/${key}/comments`, { body: `About ${key}.` });
      expect(said.status, said.text).toBe(201);
    }
    const seen = (await portal().get<{ comments: Body[] }>(`/portal/api/${id}`)).body.comments;
    expect(seen.map((c) => c.item_key)).toEqual(['company']);
    const listed = await api.get<{ comments: Body[] }>(`/v1/intakes/${id}/comments`);
    expect(listed.body.comments.map((c) => c.item_key)).toEqual(['tier', 'company']);
    // Nor does the email: it quotes the comment on the client's item alone.
    await advance(6 * 60);
    const mails = (await outbox('dana-decisions@example.test')).filter((m) =>
      m.subject?.includes('A message from'),
    );
    expect(mails).toHaveLength(1);
    expect(mails[0]?.text).toContain('About company.');
    expect(mails[0]?.text).not.toContain('About tier.');
  });

  it('refuses empty, overlong and unknown-item comments, and another account sees nothing (404)', async () => {
    const id = await createIntake();
    expect((await api.post(`/v1/intakes/${id}/items/company/comments`, { body: '  ' })).status).toBe(400);
    expect(
      (await api.post(`/v1/intakes/${id}/items/company/comments`, { body: 'x'.repeat(5001) })).status,
    ).toBe(400);
    expect((await api.post(`/v1/intakes/${id}/items/nope/comments`, { body: 'hi' })).status).toBe(404);
    expect((await portal().post(`/portal/api/${id}/items/nope/comments`, { body: 'hi' })).status).toBe(404);
    expect((await other.post(`/v1/intakes/${id}/items/company/comments`, { body: 'hi' })).status).toBe(404);
    expect((await other.get(`/v1/intakes/${id}/comments`)).status).toBe(404);
  });

  it('agent tools: definitions with section and show_if, a comment tool and the list of comments', async () => {
    const mcp = new McpClient({ name: 'richer-requests-tests', version: '1.0.0' });
    await mcp.connect(
      new StreamableHTTPClientTransport(new URL('/mcp', server.url), {
        requestInit: { headers: { authorization: `Bearer ${testKey}` } },
      }),
    );
    try {
      const call = async (name: string, args: Body) => {
        const result = await mcp.request(
          { method: 'tools/call', params: { name, arguments: args } },
          CallToolResultSchema,
        );
        expect(result.isError ?? false, JSON.stringify(result.content)).toBe(false);
        return result.structuredContent as Body;
      };
      const defined = await call('define_intake', {
        project_name: 'Agent request',
        client: { email: 'agent-client@example.test', name: 'Dana' },
        items: ITEMS,
      });
      const id = defined.intake_id as string;
      const intake = await api.get<{ items: { show_if: unknown; section: string | null }[] }>(
        `/v1/intakes/${id}`,
      );
      expect(intake.body.items[2]).toMatchObject({
        section: 'Brand',
        show_if: { item_key: 'has_logo', equals: true },
      });
      const comment = await call('comment_on_item', {
        intake_id: id,
        item_key: 'company',
        body: 'Legal name, please.',
      });
      expect(comment).toMatchObject({ author: 'owner', item_key: 'company' });
      const listed = await call('list_comments', { intake_id: id, limit: 10 });
      expect(listed).toMatchObject({
        has_more: false,
        comments: [{ id: comment.id, body: 'Legal name, please.' }],
      });
    } finally {
      await mcp.close();
    }
  });
});
