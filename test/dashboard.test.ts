import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount } from '../src/modules/accounts/accounts.service.js';
import { DATABASES } from './helpers/env.js';
import { client } from './helpers/http.js';
import { startSmtpServer } from './helpers/mail.js';
import {
  csrfOf,
  dashboardClient,
  ownerEmail,
  signInLinkOf,
  type DashboardClient,
} from './helpers/dashboard.js';
import { startTestServer, type TestServer } from './helpers/server.js';

/**
 * The dashboard over HTTP: sign-in through the emailed one-time link (captured by a real SMTP server),
 * CSRF on every form, session expiry and sign-out, and tenant isolation (another account's id → 404).
 */
describe.each(DATABASES)('dashboard sessions on %s', (database) => {
  let server: TestServer;
  let smtp: Awaited<ReturnType<typeof startSmtpServer>>;

  beforeAll(async () => {
    smtp = await startSmtpServer();
    server = await startTestServer(database, { SMTP_URL: smtp.url });
  });
  afterAll(async () => {
    await server?.stop();
    await smtp?.close();
  });

  async function emailedLink(email: string, count = 1): Promise<string> {
    const mails = await smtp.waitFor(email, count);
    const latest = mails[count - 1];
    if (!latest) throw new Error(`No sign-in email for ${email}`);
    return signInLinkOf(latest.parsed.text ?? '');
  }

  async function signedIn(email: string, mailsBefore = 0): Promise<DashboardClient> {
    const browser = dashboardClient(server.url);
    const form = await browser.get('/dashboard/sign-in');
    expect(form.status).toBe(200);
    const sent = await browser.post('/dashboard/sign-in', { email, _csrf: csrfOf(form.text) });
    expect(sent.status).toBe(200);
    const link = new URL(await emailedLink(email, mailsBefore + 1));
    const landing = await browser.get(link.pathname + link.search);
    expect(landing.status).toBe(200);
    const confirmed = await browser.post('/dashboard/sign-in/confirm', {
      token: link.searchParams.get('token') ?? '',
      _csrf: csrfOf(landing.text),
    });
    expect(confirmed.status).toBe(303);
    return browser;
  }

  it('sends signed-out visitors to sign-in with a return path', async () => {
    const browser = dashboardClient(server.url);
    const page = await browser.get('/dashboard/templates');
    expect(page.status).toBe(303);
    expect(page.location).toBe('/dashboard/sign-in?return_to=%2Fdashboard%2Ftemplates');
  });

  it('signs in with the emailed one-time link, and the link works once', async () => {
    const account = await server.createAccount();
    const email = await ownerEmail(server, account.account_id);
    const browser = dashboardClient(server.url);
    const form = await browser.get('/dashboard/sign-in?return_to=%2Fdashboard%2Fkeys');
    const sent = await browser.post('/dashboard/sign-in', {
      email,
      return_to: '/dashboard/keys',
      _csrf: csrfOf(form.text),
    });
    expect(sent.text).toContain('Check your email');
    const link = new URL(await emailedLink(email));
    const token = link.searchParams.get('token') ?? '';
    const landing = await browser.get(link.pathname + link.search);
    // Opening the link changes nothing (mail scanners fetch links): the POST signs in.
    const confirmed = await browser.post('/dashboard/sign-in/confirm', {
      token,
      _csrf: csrfOf(landing.text),
    });
    expect(confirmed.status).toBe(303);
    expect(confirmed.location).toBe('/dashboard/keys');
    const cookie = confirmed.headers.getSetCookie().find((c) => c.startsWith('intake_session='));
    expect(cookie).toMatch(/HttpOnly/);
    expect(cookie).toMatch(/SameSite=Lax/);
    const keys = await browser.get('/dashboard/keys');
    expect(keys.status).toBe(200);

    // Used once: a second browser with the same link gets nothing.
    const other = dashboardClient(server.url);
    const otherLanding = await other.get(link.pathname + link.search);
    const reused = await other.post('/dashboard/sign-in/confirm', {
      token,
      _csrf: csrfOf(otherLanding.text),
    });
    expect(reused.status).toBe(410);
    expect((await other.get('/dashboard/keys')).status).toBe(303);

    // The database holds only hashes of the link and the session.
    const db = server.server.services.db.kysely;
    const sessionId = cookie?.split(';')[0]?.split('=')[1] ?? '';
    const stored = await db.selectFrom('user_sessions').select('id_hash').execute();
    expect(stored.some((row) => row.id_hash === sessionId)).toBe(false);
    const tokens = await db.selectFrom('sign_in_tokens').select('token_hash').execute();
    expect(tokens.some((row) => row.token_hash === token)).toBe(false);
  });

  it('does not say whether an address has an account, and sends nothing to unknown ones', async () => {
    const browser = dashboardClient(server.url);
    const form = await browser.get('/dashboard/sign-in');
    const before = smtp.received.length;
    const sent = await browser.post('/dashboard/sign-in', {
      email: 'nobody@example.com',
      _csrf: csrfOf(form.text),
    });
    expect(sent.status).toBe(200);
    expect(sent.text).toContain('Check your email');
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(smtp.received.length).toBe(before);
  });

  it('rejects forms without the CSRF token of this browser', async () => {
    const account = await server.createAccount();
    const email = await ownerEmail(server, account.account_id);
    const browser = await signedIn(email);
    const missing = await browser.post('/dashboard/keys', { name: 'x', scopes: 'admin' });
    expect(missing.status).toBe(403);
    const otherBrowser = dashboardClient(server.url);
    const foreignToken = csrfOf((await otherBrowser.get('/dashboard/sign-in')).text);
    const forged = await browser.post('/dashboard/keys', { name: 'x', scopes: 'admin', _csrf: foreignToken });
    expect(forged.status).toBe(403);
    const signInForged = await otherBrowser.post('/dashboard/sign-in', { email, _csrf: 'nope' });
    expect(signInForged.status).toBe(403);
    const api = client(server.url, account.live_key);
    const keys = await api.get<{ keys: unknown[] }>('/v1/keys');
    expect(keys.body.keys).toHaveLength(2);
  });

  it('ends sessions at expiry and at sign-out', async () => {
    const account = await server.createAccount();
    const email = await ownerEmail(server, account.account_id);
    const browser = await signedIn(email);
    expect((await browser.get('/dashboard/intakes')).status).toBe(200);
    // Expiry is a stored instant: move this session's to the past (the server's clock is real time).
    const db = server.server.services.db.kysely;
    const user = await db
      .selectFrom('account_users')
      .select('id')
      .where('email', '=', email)
      .executeTakeFirstOrThrow();
    await db
      .updateTable('user_sessions')
      .set({ expires_at: new Date(Date.now() - 1000).toISOString() })
      .where('user_id', '=', user.id)
      .execute();
    const expired = await browser.get('/dashboard/intakes');
    expect(expired.status).toBe(303);
    expect(expired.location).toMatch(/^\/dashboard\/sign-in/);

    const again = await signedIn(email, 1);
    const page = await again.get('/dashboard/intakes');
    expect(page.status).toBe(200);
    const out = await again.post('/dashboard/sign-out', { _csrf: csrfOf(page.text) });
    expect(out.status).toBe(303);
    expect((await again.get('/dashboard/intakes')).status).toBe(303);
  });

  it("answers 404 for another account's intake", async () => {
    const mine = await server.createAccount();
    const theirs = await server.createAccount();
    const created = await client(server.url, theirs.live_key).post<{ intake_id: string }>('/v1/intakes', {
      project_name: 'Their project',
      client: { email: 'client@example.com' },
      items: [{ key: 'about', label: 'About', type: 'text' }],
    });
    expect(created.status).toBe(201);
    const browser = await signedIn(await ownerEmail(server, mine.account_id));
    const page = await browser.get(`/dashboard/intakes/${created.body.intake_id}`);
    expect(page.status).toBe(404);
    expect(page.text).not.toContain('Their project');
    const csrf = csrfOf((await browser.get('/dashboard/intakes')).text);
    const archive = await browser.post(`/dashboard/intakes/${created.body.intake_id}/archive`, {
      _csrf: csrf,
    });
    expect(archive.status).toBe(404);
    const theirsNow = await client(server.url, theirs.live_key).get<{ status: string }>(
      `/v1/intakes/${created.body.intake_id}`,
    );
    expect(theirsNow.body.status).toBe('sent');
  });
  it('refuses an expired link, and limits how many links one address can ask for', async () => {
    const account = await server.createAccount();
    const email = await ownerEmail(server, account.account_id);
    const browser = dashboardClient(server.url);
    const form = await browser.get('/dashboard/sign-in');
    await browser.post('/dashboard/sign-in', { email, _csrf: csrfOf(form.text) });
    const link = new URL(await emailedLink(email));
    await server.server.services.db.kysely
      .updateTable('sign_in_tokens')
      .set({ expires_at: new Date(Date.now() - 1000).toISOString() })
      .execute();
    const landing = await browser.get(link.pathname + link.search);
    const late = await browser.post('/dashboard/sign-in/confirm', {
      token: link.searchParams.get('token') ?? '',
      _csrf: csrfOf(landing.text),
    });
    expect(late.status).toBe(410);
    // The expired link holds nothing: a new one goes out. Then the address's cool-down: the same page
    // every time (never a refusal that would let a stranger lock the user out), one email in a minute.
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) {
      statuses.push((await browser.post('/dashboard/sign-in', { email, _csrf: csrfOf(form.text) })).status);
    }
    expect(statuses).toEqual([200, 200, 200, 200, 200]);
    await signInJobsDone();
    expect(await smtp.waitFor(email, 2)).toHaveLength(2);
    await browser.post('/dashboard/sign-in', { email, _csrf: csrfOf(form.text) });
    await signInJobsDone();
    expect(smtp.received.filter((m) => m.envelopeTo.includes(email))).toHaveLength(2);
  });

  /** Sign-in emails are jobs: waits (bounded) until none is pending or running. */
  async function signInJobsDone(): Promise<void> {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const pending = await server.server.services.db.kysely
        .selectFrom('jobs')
        .select('id')
        .where('kind', '=', 'send_sign_in_link')
        .execute();
      if (pending.length === 0) return;
      if (Date.now() > deadline) throw new Error('sign-in email jobs still pending');
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }

  it('invites a user, who signs in to the same account; removing them ends their session', async () => {
    // The Free plan has one seat (its owner): inviting takes a plan with more.
    const account = await server.createAccount({ plan: 'solo' });
    const owner = await signedIn(await ownerEmail(server, account.account_id));
    const invitee = `invitee-${Math.random().toString(36).slice(2)}@example.com`;
    const settings = await owner.get('/dashboard/members');
    const invited = await owner.post('/dashboard/members', {
      email: invitee,
      role: 'member',
      _csrf: csrfOf(settings.text),
    });
    expect(invited.status).toBe(303);
    const [mail] = await smtp.waitFor(invitee);
    expect(mail?.parsed.subject).toContain('invited');
    const member = await signedIn(invitee, 1);
    const page = await member.get('/dashboard/settings');
    expect(page.status).toBe(200);
    expect(page.text).toContain(invitee);
    const again = await owner.post('/dashboard/members', {
      email: invitee,
      role: 'member',
      _csrf: csrfOf(settings.text),
    });
    expect(again.status).toBe(409);
    // A person may belong to several accounts: `accounts create` gives an invited address its own.
    const own = await createAccount(
      server.server.services.db.kysely,
      { email: invitee, plan: 'free' },
      new Date().toISOString(),
    );
    expect(own.account_id).not.toBe(account.account_id);

    const db = server.server.services.db.kysely;
    const row = await db
      .selectFrom('account_users')
      .select('id')
      .where('account_id', '=', account.account_id)
      .where('email', '=', invitee)
      .executeTakeFirstOrThrow();
    const removed = await owner.post(`/dashboard/members/${row.id}/remove`, {
      _csrf: csrfOf(settings.text),
    });
    expect(removed.status).toBe(303);
    expect((await member.get('/dashboard/settings')).status).toBe(303);
    const audit = await client(server.url, account.live_key).get<{
      entries: { action: string; actor: { type: string } }[];
    }>('/v1/audit?limit=50');
    const actions = audit.body.entries.filter((e) => e.actor.type === 'user').map((e) => e.action);
    expect(actions).toEqual(expect.arrayContaining(['member.invite', 'member.remove', 'user.sign_in']));
  });

  it('creates, edits and deletes a template through the service the REST API uses', async () => {
    const account = await server.createAccount();
    const browser = await signedIn(await ownerEmail(server, account.account_id));
    const form = await browser.get('/dashboard/templates/new');
    const csrf = csrfOf(form.text);
    const bad = await browser.post('/dashboard/templates', {
      _csrf: csrf,
      name: 'Onboarding',
      'items[0][label]': 'Logo',
      'items[0][type]': 'image',
      'items[0][formats]': 'png, doc',
    });
    expect(bad.status).toBe(422);
    expect(bad.text).toContain('doc');
    const created = await browser.post('/dashboard/templates', {
      _csrf: csrf,
      name: 'Onboarding',
      'items[0][label]': 'Logo',
      'items[0][type]': 'image',
      'items[0][required]': 'on',
      'items[0][formats]': 'png, svg',
      'items[1][label]': 'Brand colour',
      'items[1][type]': 'select',
      'items[1][options]': 'blue: Blue\ngreen: Green',
    });
    expect(created.status).toBe(303);
    const api = client(server.url, account.live_key);
    const list = await api.get<{ templates: { id: string; items: { key: string; options?: unknown }[] }[] }>(
      '/v1/templates',
    );
    const template = list.body.templates[0];
    expect(template?.items.map((i) => i.key)).toEqual(['logo', 'brand_colour']);
    expect(template?.items[1]?.options).toEqual([
      { value: 'blue', label: 'Blue' },
      { value: 'green', label: 'Green' },
    ]);
    const id = template?.id ?? '';
    const edited = await browser.post(`/dashboard/templates/${id}`, {
      _csrf: csrf,
      name: 'Onboarding v2',
      'items[0][label]': 'About',
      'items[0][type]': 'longtext',
      'items[0][max_chars]': '500',
    });
    expect(edited.status).toBe(303);
    const after = await api.get<{ name: string; items: { key: string; constraints: object }[] }>(
      `/v1/templates/${id}`,
    );
    expect(after.body.name).toBe('Onboarding v2');
    expect(after.body.items).toEqual([
      expect.objectContaining({ key: 'about', constraints: { max_chars: 500 } }),
    ]);
    const patched = await api.patch<{ name: string }>(`/v1/templates/${id}`, { name: 'Via REST' });
    expect(patched.body.name).toBe('Via REST');
    const deleted = await browser.post(`/dashboard/templates/${id}/delete`, { _csrf: csrf });
    expect(deleted.status).toBe(303);
    expect((await api.get(`/v1/templates/${id}`)).status).toBe(404);
  });

  it('answers an owner decision as the signed-in user', async () => {
    const account = await server.createAccount();
    const api = client(server.url, account.live_key);
    const created = await api.post<{ intake_id: string }>('/v1/intakes', {
      project_name: 'Decisions',
      client: { email: 'client@example.com' },
      items: [
        { key: 'about', label: 'About', type: 'text' },
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
    expect(created.status).toBe(201);
    const id = created.body.intake_id;
    const browser = await signedIn(await ownerEmail(server, account.account_id));
    const detail = await browser.get(`/dashboard/intakes/${id}`);
    expect(detail.text).toContain(`/dashboard/intakes/${id}/items/tier/decide`);
    const wrong = await browser.post(`/dashboard/intakes/${id}/items/tier/decide`, {
      value: 'platinum',
      _csrf: csrfOf(detail.text),
    });
    expect(wrong.status).toBe(422);
    const decided = await browser.post(`/dashboard/intakes/${id}/items/tier/decide`, {
      value: 'pro',
      _csrf: csrfOf(detail.text),
    });
    expect(decided.status).toBe(303);
    const intake = await api.get<{ items: { key: string; status: string }[] }>(`/v1/intakes/${id}`);
    expect(intake.body.items.find((i) => i.key === 'tier')?.status).toBe('approved');
  });
  it('creates from a template, sends a draft, chases, archives and deletes an intake', async () => {
    const account = await server.createAccount();
    const api = client(server.url, account.live_key);
    const template = await api.post<{ id: string }>('/v1/templates', {
      name: 'Basics',
      items: [{ key: 'about', label: 'About', type: 'text' }],
    });
    const browser = await signedIn(await ownerEmail(server, account.account_id));
    const csrf = csrfOf((await browser.get('/dashboard/intakes/new')).text);
    const created = await browser.post('/dashboard/intakes', {
      _csrf: csrf,
      project_name: 'From a template',
      client_email: 'client@example.com',
      source: 'template',
      template_id: template.body.id,
      chase_schedule: 'default',
    });
    expect(created.status).toBe(303);
    const id = created.location?.split('/').pop()?.split('?')[0] ?? '';
    const draft = await api.get<{ status: string; template_id: string; items: { key: string }[] }>(
      `/v1/intakes/${id}`,
    );
    expect(draft.body).toMatchObject({
      status: 'draft',
      template_id: template.body.id,
      items: [{ key: 'about' }],
    });

    expect((await browser.post(`/dashboard/intakes/${id}/send`, { _csrf: csrf })).status).toBe(303);
    expect((await api.get<{ status: string }>(`/v1/intakes/${id}`)).body.status).toBe('sent');
    const chased = await browser.post(`/dashboard/intakes/${id}/chase`, { _csrf: csrf, channel: 'email' });
    expect(chased.location).toContain('notice=chased');
    const status = await api.get<{ chases: { trigger: string }[] }>(`/v1/intakes/${id}/status`);
    expect(status.body.chases.some((c) => c.trigger === 'manual')).toBe(true);
    expect((await browser.post(`/dashboard/intakes/${id}/archive`, { _csrf: csrf })).status).toBe(303);
    expect((await api.get<{ status: string }>(`/v1/intakes/${id}`)).body.status).toBe('archived');
    const deleted = await browser.post(`/dashboard/intakes/${id}/delete`, { _csrf: csrf });
    expect(deleted.location).toBe('/dashboard/intakes?notice=deleted');
    expect((await api.get(`/v1/intakes/${id}`)).status).toBe(404);

    const invalid = await browser.post('/dashboard/intakes', {
      _csrf: csrf,
      project_name: 'Broken',
      client_email: 'not-an-email',
      'items[0][label]': 'About',
    });
    expect(invalid.status).toBe(400);
    expect(invalid.text).toContain('client.email');
  });

  it('saves settings and branding from the multipart settings form, CSRF-checked', async () => {
    const account = await server.createAccount({ plan: 'agency' });
    const browser = await signedIn(await ownerEmail(server, account.account_id));
    const page = await browser.get('/dashboard/settings');
    const logo = Buffer.from(
      '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10"/></svg>',
    );
    const send = (csrf: string) => {
      const body = new FormData();
      body.append('_csrf', csrf);
      body.append('name', 'Fjord Studio');
      body.append('default_language', 'fr');
      body.append('accent_color', '#0f766e');
      body.append('logo', new Blob([logo], { type: 'image/svg+xml' }), 'logo.svg');
      return fetch(`${server.url}/dashboard/settings`, {
        method: 'POST',
        body,
        redirect: 'manual',
        headers: { cookie: [...browser.jar].map(([k, v]) => `${k}=${v}`).join('; ') },
      });
    };
    expect((await send('forged')).status).toBe(403);
    const saved = await send(csrfOf(page.text));
    expect(saved.status).toBe(303);
    const api = client(server.url, account.live_key);
    const after = await api.get<{
      name: string;
      default_language: string;
      branding: { logo_url: string; accent_color: string };
    }>('/v1/account');
    expect(after.body).toMatchObject({
      name: 'Fjord Studio',
      default_language: 'fr',
      branding: { accent_color: '#0f766e' },
    });
    expect(after.body.branding.logo_url).toBe(`data:image/svg+xml;base64,${logo.toString('base64')}`);
    expect((await browser.get('/dashboard/settings')).text).toContain('<h1>Réglages</h1>');
  });
  it("shows usage against the plan, each key's requests this hour, and the upgrade buttons", async () => {
    const account = await server.createAccount({ plan: 'free' });
    const api = client(server.url, account.live_key);
    for (let i = 0; i < 3; i++) expect((await api.get('/v1/intakes')).status).toBe(200);
    const browser = await signedIn(await ownerEmail(server, account.account_id));
    const usage = await browser.get('/dashboard/usage');
    expect(usage.status).toBe(200);
    expect(usage.text).toMatch(/Default live key \(svc_live_[^)]*\)<\/h3>[\s\S]*?<p>3 of \d+<\/p>/);
    expect(usage.text).not.toContain('Default test key');
    expect(usage.text).toContain('action="/dashboard/billing/checkout"');
    expect(usage.text).toContain('value="solo"');
  });
});

describe.each(DATABASES)('dashboard sign-in without SMTP on %s', (database) => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer(database);
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('puts the link in the development outbox, shown in the live inbox, and renders pages in the account language', async () => {
    const account = await server.createAccount();
    const email = await ownerEmail(server, account.account_id);
    const api = client(server.url, account.live_key);
    expect((await api.patch('/v1/account', { default_language: 'de' })).status).toBe(200);
    const browser = dashboardClient(server.url);
    const form = await browser.get('/dashboard/sign-in');
    await browser.post('/dashboard/sign-in', { email, _csrf: csrfOf(form.text) });
    // The email is a job (the request answers before it is written): wait for it, bounded.
    const findMessage = () =>
      server.server.services.db.kysely
        .selectFrom('messages')
        .select(['text_body', 'subject', 'livemode', 'status'])
        .where('account_id', '=', account.account_id)
        .where('to_address', '=', email)
        .executeTakeFirst();
    const deadline = Date.now() + 10_000;
    let found = await findMessage();
    while (!found && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 25));
      found = await findMessage();
    }
    if (!found) throw new Error(`No outbox message for ${email}`);
    const message = found;
    expect(message).toMatchObject({ livemode: 1, status: 'captured' });
    expect(message.subject).toContain('Anmeldelink');
    const link = new URL(signInLinkOf(message.text_body ?? ''));
    const landing = await browser.get(link.pathname + link.search);
    const confirmed = await browser.post('/dashboard/sign-in/confirm', {
      token: link.searchParams.get('token') ?? '',
      _csrf: csrfOf(landing.text),
    });
    expect(confirmed.status).toBe(303);
    const intakes = await browser.get('/dashboard/intakes');
    expect(intakes.text).toContain('<html lang="de">');
    expect(intakes.text).toContain('<h1>Anfragen</h1>');
    const inbox = await browser.get('/dashboard/inbox');
    expect(inbox.text).toContain(email);
    expect(inbox.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
  });
});
