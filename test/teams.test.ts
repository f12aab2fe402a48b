import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256Hex } from '../src/lib/secrets.js';
import { createKey } from '../src/modules/keys/keys.service.js';
import { issueCode } from '../src/modules/oauth/oauth.service.js';
import { findClient } from '../src/modules/oauth/oauth.repository.js';
import { insertSession } from '../src/modules/sessions/sessions.repository.js';
import { csrfOf, dashboardClient, signInLinkOf } from './helpers/dashboard.js';
import { DATABASES } from './helpers/env.js';
import { client } from './helpers/http.js';
import { startSmtpServer } from './helpers/mail.js';
import { startTestServer, type TestServer } from './helpers/server.js';

/**
 * Teams: members with roles on one account. Invitation by email and acceptance by its link, role
 * changes and ownership hand-over, seats per plan, each role's allowed and refused actions in the API
 * and the dashboard (enforced on the server), audit entries that name the person, and removal, which
 * ends everything the person could act with: sessions, the keys they made, their OAuth grants and
 * refresh tokens, and device sign-ins.
 */

type Body = Record<string, unknown>;
interface MemberBody {
  id: string;
  email: string;
  name: string | null;
  role: string;
  status: string;
}
const ROLES = ['owner', 'admin', 'member', 'viewer'] as const;
type Role = (typeof ROLES)[number];

const INTAKE = {
  project_name: 'Team intake',
  client: { email: 'client@example.com' },
  items: [{ key: 'about', label: 'About you', type: 'text' }],
};

describe.each(DATABASES)('teams on %s', (database) => {
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

  const db = () => server.server.services.db.kysely;
  const unique = (label: string) => `${label}-${randomBytes(5).toString('hex')}@example.com`;

  /** A signed-in dashboard browser for a member, as a used sign-in link leaves it (the flow has its own test). */
  async function sessionOf(accountId: string, userId: string) {
    const raw = randomBytes(32).toString('base64url');
    const now = new Date();
    await insertSession(db(), {
      id_hash: sha256Hex(raw),
      user_id: userId,
      account_id: accountId,
      livemode: 1,
      created_at: now.toISOString(),
      expires_at: new Date(now.getTime() + 3_600_000).toISOString(),
      last_seen_at: now.toISOString(),
    });
    const browser = dashboardClient(server.url);
    browser.jar.set('intake_session', raw);
    return browser;
  }

  /** An API key made by a person (as the dashboard's keys page or an agent approval records it). */
  async function keyOf(accountId: string, userId: string, scopes: string[] = ['admin']) {
    const at = new Date().toISOString();
    const key = await createKey(
      db(),
      { accountId, createdByKeyId: null, createdByUserId: userId, at },
      { name: `key of ${userId}`, mode: 'live', scopes },
    );
    return key.key;
  }

  async function team(plan: 'solo' | 'agency') {
    const account = await server.createAccount({ plan });
    const api = client(server.url, account.live_key);
    const owner = await db()
      .selectFrom('account_users')
      .select('id')
      .where('account_id', '=', account.account_id)
      .where('role', '=', 'owner')
      .executeTakeFirstOrThrow();
    return { account, api, ownerId: owner.id };
  }

  async function invite(api: ReturnType<typeof client>, role: Exclude<Role, 'owner'>, email = unique(role)) {
    const answer = await api.post<MemberBody>('/v1/members', { email, name: `A ${role}`, role });
    expect(answer.status, answer.text).toBe(201);
    return answer.body;
  }

  it('invites by email, the link signs the person in (invited → active), and roles change', async () => {
    const { account, api, ownerId } = await team('agency');
    expect(ownerId).toMatch(/^mem_/);
    const email = unique('colleague');
    const invited = await invite(api, 'viewer', email);
    expect(invited).toMatchObject({ email, name: 'A viewer', role: 'viewer', status: 'invited' });
    expect(invited.id).toMatch(/^mem_/);

    const [mail] = await smtp.waitFor(email);
    expect(mail?.parsed.subject).toContain('invited');
    const link = new URL(signInLinkOf(mail?.parsed.text ?? ''));
    const browser = dashboardClient(server.url);
    const landing = await browser.get(link.pathname + link.search);
    const confirmed = await browser.post('/dashboard/sign-in/confirm', {
      token: link.searchParams.get('token') ?? '',
      _csrf: csrfOf(landing.text),
    });
    expect(confirmed.status).toBe(303);
    expect((await browser.get('/dashboard/intakes')).status).toBe(200);

    const listed = await api.get<{ members: MemberBody[]; seats: { used: number; limit: number } }>(
      '/v1/members',
    );
    expect(listed.status).toBe(200);
    expect(listed.body.seats).toEqual({ used: 2, limit: 10 });
    expect(listed.body.members.map((m) => [m.role, m.status])).toEqual([
      ['owner', 'active'],
      ['viewer', 'active'],
    ]);

    // The role applies from the next request: a viewer may not create (nor open the builder), a member may.
    const refused = await browser.get('/dashboard/intakes/new');
    expect(refused.status).toBe(403);
    expect(refused.text).toContain('Your role (viewer) does not allow this.');
    const page = await browser.get('/dashboard/intakes');
    expect(page.status).toBe(200);
    const asViewer = await browser.post('/dashboard/intakes', { _csrf: csrfOf(page.text) });
    expect(asViewer.status).toBe(403);
    const changed = await api.patch<MemberBody>(`/v1/members/${invited.id}`, { role: 'member' });
    expect(changed.status, changed.text).toBe(200);
    expect(changed.body.role).toBe('member');
    const asMember = await browser.post('/dashboard/intakes', { _csrf: csrfOf(page.text) });
    expect(asMember.status).not.toBe(403);
    expect((await browser.get('/dashboard/intakes/new')).status).toBe(200);

    // Ownership: exactly one owner, handed over by the owner only.
    const adminId = (await invite(api, 'admin')).id;
    const adminApi = client(server.url, await keyOf(account.account_id, adminId));
    expect((await adminApi.patch(`/v1/members/${invited.id}`, { role: 'owner' })).status).toBe(403);
    expect((await api.delete(`/v1/members/${ownerId}`)).status).toBe(409);
    expect((await api.patch(`/v1/members/${ownerId}`, { role: 'admin' })).status).toBe(409);
    const handedOver = await api.patch<MemberBody>(`/v1/members/${adminId}`, { role: 'owner' });
    expect(handedOver.body.role).toBe('owner');
    const after = await api.get<{ members: MemberBody[] }>('/v1/members');
    expect(after.body.members.filter((m) => m.role === 'owner').map((m) => m.id)).toEqual([adminId]);
    expect(after.body.members.find((m) => m.id === ownerId)?.role).toBe('admin');

    // Another account's member is not found; test keys do not manage the team; bodies are strict.
    const other = await team('agency');
    expect((await other.api.patch(`/v1/members/${invited.id}`, { role: 'viewer' })).status).toBe(404);
    expect((await other.api.delete(`/v1/members/${invited.id}`)).status).toBe(404);
    const testApi = client(server.url, account.test_key);
    expect((await testApi.post('/v1/members', { email: unique('t'), role: 'viewer' })).status).toBe(403);
    expect((await api.post('/v1/members', { email: unique('o'), role: 'owner' })).status).toBe(400);
    expect((await api.post('/v1/members', { email: unique('x'), role: 'viewer', plan: 'x' })).status).toBe(
      400,
    );
    expect((await api.post('/v1/members', { email, role: 'viewer' })).status).toBe(409);
  });

  it('limits seats per plan with 402 plan_required, shown in /pricing.json and usage', async () => {
    const pricing = await client(server.url).get<{ plans: { id: string; quotas: { seats: number } }[] }>(
      '/pricing.json',
    );
    expect(Object.fromEntries(pricing.body.plans.map((p) => [p.id, p.quotas.seats]))).toEqual({
      free: 1,
      solo: 3,
      agency: 10,
    });
    const free = await server.createAccount({ plan: 'free' });
    const refusedFree = await client(server.url, free.live_key).post('/v1/members', {
      email: unique('free'),
      role: 'viewer',
    });
    expect(refusedFree.status).toBe(402);
    expect(refusedFree.body.error).toBe('plan_required');

    const { api } = await team('solo');
    await invite(api, 'member');
    const last = await invite(api, 'viewer');
    const refused = await api.post<Body>('/v1/members', { email: unique('fourth'), role: 'viewer' });
    expect(refused.status).toBe(402);
    expect(refused.body.error).toBe('plan_required');
    const usage = await api.get<{ seats: { used: number; limit: number } }>('/v1/usage');
    expect(usage.body.seats).toEqual({ used: 3, limit: 3 });
    // A removed member frees their seat.
    expect((await api.delete(`/v1/members/${last.id}`)).status).toBe(204);
    expect((await api.post('/v1/members', { email: unique('again'), role: 'viewer' })).status).toBe(201);
  });

  it("gives each role its actions in the API (a person's key never exceeds the role) and the dashboard", async () => {
    const { account, api, ownerId } = await team('agency');
    const ids: Record<Role, string> = {
      owner: ownerId,
      admin: (await invite(api, 'admin')).id,
      member: (await invite(api, 'member')).id,
      viewer: (await invite(api, 'viewer')).id,
    };
    // Every key is minted with every scope: the person's role caps it.
    const keys = Object.fromEntries(
      await Promise.all(ROLES.map(async (role) => [role, await keyOf(account.account_id, ids[role])])),
    ) as Record<Role, string>;

    const apiActions: [string, (c: ReturnType<typeof client>) => Promise<{ status: number }>][] = [
      ['GET /v1/intakes', (c) => c.get('/v1/intakes')],
      ['POST /v1/intakes', (c) => c.post('/v1/intakes', INTAKE)],
      ['GET /v1/keys', (c) => c.get('/v1/keys')],
      ['GET /v1/webhooks', (c) => c.get('/v1/webhooks')],
      ['GET /v1/members', (c) => c.get('/v1/members')],
      ['POST /v1/billing/portal', (c) => c.post('/v1/billing/portal', {})],
    ];
    const apiSeen: Record<string, Record<Role, number>> = {};
    for (const [name, run] of apiActions) {
      apiSeen[name] = {} as Record<Role, number>;
      for (const role of ROLES) apiSeen[name][role] = (await run(client(server.url, keys[role]))).status;
    }
    expect(apiSeen).toEqual({
      'GET /v1/intakes': { owner: 200, admin: 200, member: 200, viewer: 200 },
      'POST /v1/intakes': { owner: 201, admin: 201, member: 201, viewer: 403 },
      'GET /v1/keys': { owner: 200, admin: 200, member: 403, viewer: 403 },
      'GET /v1/webhooks': { owner: 200, admin: 200, member: 403, viewer: 403 },
      'GET /v1/members': { owner: 200, admin: 200, member: 403, viewer: 403 },
      'POST /v1/billing/portal': { owner: 200, admin: 403, member: 403, viewer: 403 },
    });
    // A key made by a key keeps the maker's person: a member cannot mint past the role.
    const memberMinted = await client(server.url, keys.member).post('/v1/keys', {
      name: 'x',
      scopes: ['intakes:read'],
    });
    expect(memberMinted.status).toBe(403);

    const browsers = Object.fromEntries(
      await Promise.all(ROLES.map(async (role) => [role, await sessionOf(account.account_id, ids[role])])),
    ) as Record<Role, Awaited<ReturnType<typeof sessionOf>>>;
    const dashSeen: Record<string, Record<Role, number>> = {};
    const dashActions: [string, 'GET' | 'POST', string, Record<string, string>][] = [
      ['intakes', 'GET', '/dashboard/intakes', {}],
      ['keys page', 'GET', '/dashboard/keys', {}],
      ['members page', 'GET', '/dashboard/members', {}],
      ['create key', 'POST', '/dashboard/keys', { name: 'from dashboard', scopes: 'intakes:read' }],
      ['new intake', 'POST', '/dashboard/intakes', {}],
      ['builder page', 'GET', '/dashboard/intakes/new', {}],
      ['template builder page', 'GET', '/dashboard/templates/new', {}],
      ['settings', 'POST', '/dashboard/settings/notifications', { frequency: 'off' }],
      ['billing', 'POST', '/dashboard/billing/portal', {}],
    ];
    for (const role of ROLES) {
      const browser = browsers[role];
      const csrf = csrfOf((await browser.get('/dashboard/usage')).text);
      for (const [name, method, path, form] of dashActions) {
        dashSeen[name] ??= {} as Record<Role, number>;
        const answer =
          method === 'GET' ? await browser.get(path) : await browser.post(path, { ...form, _csrf: csrf });
        // Refused is 403; anything else (200, a redirect, a form's own 4xx) got past the role check.
        dashSeen[name][role] = answer.status === 403 ? 403 : 0;
      }
    }
    expect(dashSeen).toEqual({
      intakes: { owner: 0, admin: 0, member: 0, viewer: 0 },
      'keys page': { owner: 0, admin: 0, member: 403, viewer: 403 },
      'members page': { owner: 0, admin: 0, member: 403, viewer: 403 },
      'create key': { owner: 0, admin: 0, member: 403, viewer: 403 },
      'new intake': { owner: 0, admin: 0, member: 0, viewer: 403 },
      'builder page': { owner: 0, admin: 0, member: 0, viewer: 403 },
      'template builder page': { owner: 0, admin: 0, member: 0, viewer: 403 },
      settings: { owner: 0, admin: 0, member: 0, viewer: 0 },
      billing: { owner: 0, admin: 403, member: 403, viewer: 403 },
    });
    // The navigation shows only what the role may open (a courtesy: the server refuses the rest).
    const viewerPage = (await browsers.viewer.get('/dashboard/intakes')).text;
    expect(viewerPage).not.toContain('href="/dashboard/keys"');
    expect(viewerPage).not.toContain('href="/dashboard/members"');
    expect(viewerPage).not.toContain('href="/dashboard/intakes/new"');
    expect((await browsers.admin.get('/dashboard/intakes')).text).toContain('href="/dashboard/members"');

    // A key made in the dashboard records the person who made it; so does the audit log.
    const dashboardKeys = await db()
      .selectFrom('api_keys')
      .select('created_by_user_id')
      .where('name', '=', 'from dashboard')
      .where('account_id', '=', account.account_id)
      .execute();
    expect(dashboardKeys.map((k) => k.created_by_user_id).sort()).toEqual([ids.owner, ids.admin].sort());
    const audit = await api.get<{
      entries: { action: string; actor: { type: string; id: string }; person_id: string | null }[];
    }>('/v1/audit?limit=100');
    const creations = audit.body.entries.filter((e) => e.action === 'intake.create');
    expect(creations.map((e) => e.person_id).sort()).toEqual([ids.admin, ids.member, ids.owner].sort());
    expect(creations.every((e) => e.actor.type === 'api_key')).toBe(true);
    const invites = audit.body.entries.filter((e) => e.action === 'member.invite');
    expect(invites).toHaveLength(3);
    expect(invites.every((e) => e.actor.type === 'api_key' && e.person_id === null)).toBe(true);
  });

  it('removing a member ends their sessions, keys, OAuth grants and refresh tokens, and device sign-ins', async () => {
    const { account, api } = await team('agency');
    const leaver = await invite(api, 'admin');
    const browser = await sessionOf(account.account_id, leaver.id);

    // A key they made in the dashboard.
    const keysPage = await browser.get('/dashboard/keys');
    const made = await browser.post('/dashboard/keys', {
      name: 'leaver key',
      scopes: 'admin',
      _csrf: csrfOf(keysPage.text),
    });
    const dashboardKey = /svc_live_[A-Za-z0-9]+/.exec(made.text)?.[0] ?? '';
    expect(dashboardKey).not.toBe('');

    // An OAuth grant they approved: access token and refresh token.
    const registered = await client(server.url).post<Body>('/oauth/register', {
      client_name: 'Agent',
      redirect_uris: ['http://127.0.0.1:9/callback'],
    });
    expect(registered.status, registered.text).toBe(201);
    const clientId = String(registered.body.client_id);
    const oauthClient = await findClient(db(), clientId);
    if (!oauthClient) throw new Error(`client ${clientId} was not stored`);
    const verifier = randomBytes(32).toString('base64url');
    const code = await issueCode(
      db(),
      {
        accountId: account.account_id,
        livemode: true,
        userId: leaver.id,
        scopes: ['admin'],
        client: oauthClient,
        redirectUri: 'http://127.0.0.1:9/callback',
        codeChallenge: createHash('sha256').update(verifier).digest('base64url'),
        resource: null,
      },
      new Date(),
    );
    const token = (form: Record<string, string>) =>
      client(server.url).call<Body>('POST', '/oauth/token', {
        rawBody: new URLSearchParams({
          client_id: clientId,
          client_secret: String(registered.body.client_secret),
          ...form,
        }).toString(),
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      });
    const issued = await token({
      grant_type: 'authorization_code',
      code,
      redirect_uri: 'http://127.0.0.1:9/callback',
      code_verifier: verifier,
    });
    expect(issued.status, issued.text).toBe(200);
    const accessToken = String(issued.body.access_token);
    const refreshToken = String(issued.body.refresh_token);

    // A device they approved, and one approved but not yet collected.
    const device = async () => {
      const started = await client(server.url).call<Body>('POST', '/oauth/device_authorization', {
        rawBody: 'client_id=intake-cli&scope=admin',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      });
      const userCode = String(started.body.user_code);
      const page = await browser.get(`/dashboard/device?user_code=${userCode}`);
      const approved = await browser.post('/dashboard/device', {
        _csrf: csrfOf(page.text),
        user_code: userCode,
        scope: 'admin',
        mode: 'live',
        decision: 'approve',
      });
      expect(approved.status).toBe(200);
      return String(started.body.device_code);
    };
    const poll = (deviceCode: string) =>
      client(server.url).call<Body>('POST', '/oauth/token', {
        rawBody: new URLSearchParams({
          grant_type: 'urn:ietf:params:oauth:grant-type:device_code',
          device_code: deviceCode,
          client_id: 'intake-cli',
        }).toString(),
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      });
    const collected = await poll(await device());
    expect(collected.status, collected.text).toBe(200);
    const deviceKey = String(collected.body.access_token);
    const uncollected = await device();

    const works = async (key: string) => (await client(server.url, key).get('/v1/intakes')).status;
    expect([dashboardKey, accessToken, deviceKey].map((k) => k.slice(0, 9))).toEqual([
      'svc_live_',
      'svc_live_',
      'svc_live_',
    ]);
    expect(await Promise.all([dashboardKey, accessToken, deviceKey].map(works))).toEqual([200, 200, 200]);

    expect((await api.delete(`/v1/members/${leaver.id}`)).status).toBe(204);

    expect((await browser.get('/dashboard/intakes')).status).toBe(303);
    expect(await Promise.all([dashboardKey, accessToken, deviceKey].map(works))).toEqual([401, 401, 401]);
    const refreshed = await token({ grant_type: 'refresh_token', refresh_token: refreshToken });
    expect(refreshed.body.error).toBe('invalid_grant');
    expect((await poll(uncollected)).body.error).toBe('access_denied');
    const revoked = await db()
      .selectFrom('api_keys')
      .select('revoked_at')
      .where('created_by_user_id', '=', leaver.id)
      .execute();
    expect(revoked.length).toBeGreaterThanOrEqual(3);
    expect(revoked.every((k) => k.revoked_at !== null)).toBe(true);
  });

  /** Follows an emailed link as a browser does: the confirm page, then its button. */
  async function followLink(browser: ReturnType<typeof dashboardClient>, mailText: string) {
    const link = new URL(signInLinkOf(mailText));
    const landing = await browser.get(link.pathname + link.search);
    const confirmed = await browser.post('/dashboard/sign-in/confirm', {
      token: link.searchParams.get('token') ?? '',
      _csrf: csrfOf(landing.text),
    });
    expect(confirmed.status).toBe(303);
    return confirmed.location;
  }

  /** Asks for a sign-in link by the form, and follows the n-th email to the address. */
  async function signInByEmail(email: string, nth: number) {
    const browser = dashboardClient(server.url);
    const form = await browser.get('/dashboard/sign-in');
    expect((await browser.post('/dashboard/sign-in', { email, _csrf: csrfOf(form.text) })).status).toBe(200);
    const mails = await smtp.waitFor(email, nth, 15_000);
    expect(mails.length).toBe(nth);
    const landed = await followLink(browser, mails[nth - 1]?.parsed.text ?? '');
    return { browser, landed };
  }

  const accountNameOf = async (browser: ReturnType<typeof dashboardClient>) => {
    const page = await browser.get('/dashboard/intakes');
    expect(page.status).toBe(200);
    return /<option value="(acct_[^"]+)"\s+selected/.exec(page.text)?.[1] ?? null;
  };

  it('one person in several accounts: invitation adds a membership, sign-in lands in the last used, the switcher moves the session', async () => {
    const home = await team('agency');
    const person = await db()
      .selectFrom('account_users')
      .select(['email', 'id'])
      .where('id', '=', home.ownerId)
      .executeTakeFirstOrThrow();
    const agency = await team('agency');
    const stranger = await team('agency');

    // An address that owns an account elsewhere can be invited; accepting adds a membership.
    const joined = await invite(agency.api, 'viewer', person.email);
    expect(joined).toMatchObject({ email: person.email, role: 'viewer', status: 'invited' });
    expect((await agency.api.post('/v1/members', { email: person.email, role: 'member' })).status).toBe(409);
    const [invitation] = await smtp.waitFor(person.email);
    const browser = dashboardClient(server.url);
    await followLink(browser, invitation?.parsed.text ?? '');
    expect(await accountNameOf(browser)).toBe(agency.account.account_id);

    // The switcher lists both accounts with the role in each; a viewer may use it.
    const page = await browser.get('/dashboard/intakes');
    expect(page.text).toContain('action="/dashboard/accounts/switch"');
    expect((page.text.match(/<option value="acct_/g) ?? []).length).toBe(2);
    expect(page.text).toMatch(/\(Viewer\)/);
    expect(page.text).toMatch(/\(Owner\)/);
    const csrf = csrfOf(page.text);
    const switched = await browser.post('/dashboard/accounts/switch', {
      _csrf: csrf,
      account_id: home.account.account_id,
    });
    expect(switched.status, switched.text).toBe(303);
    expect(await accountNameOf(browser)).toBe(home.account.account_id);
    // Now the owner of home: its members page opens (the viewer role of the other account is gone).
    expect((await browser.get('/dashboard/members')).status).toBe(200);

    // Only accounts where the address is an active member: another account, or a made-up id, is 404.
    for (const accountId of [stranger.account.account_id, 'acct_doesnotexist']) {
      const refused = await browser.post('/dashboard/accounts/switch', {
        _csrf: csrf,
        account_id: accountId,
      });
      expect(refused.status).toBe(404);
    }
    expect(await accountNameOf(browser)).toBe(home.account.account_id);
    // An invitation not yet accepted does not count either.
    await invite(stranger.api, 'admin', person.email);
    expect(
      (
        await browser.post('/dashboard/accounts/switch', {
          _csrf: csrf,
          account_id: stranger.account.account_id,
        })
      ).status,
    ).toBe(404);
    // Without the form's token, nothing moves.
    expect(
      (
        await browser.post('/dashboard/accounts/switch', {
          _csrf: 'x',
          account_id: agency.account.account_id,
        })
      ).status,
    ).toBe(403);

    // Sessions stay per account: another account's intake is still not found.
    const foreign = await agency.api.post<{ intake_id: string }>('/v1/intakes', INTAKE);
    expect((await browser.get(`/dashboard/intakes/${foreign.body.intake_id}`)).status).toBe(404);
    // Audit entries stay per account: the switch is in the account switched to, naming the person.
    const entries = await db()
      .selectFrom('audit_entries')
      .select(['account_id', 'person_id'])
      .where('action', '=', 'user.account_switch')
      .where('person_id', '=', person.id)
      .execute();
    expect(entries).toEqual([{ account_id: home.account.account_id, person_id: person.id }]);

    // Back in the agency, then a sign-in link lands there: the account used last.
    const back = await browser.post('/dashboard/accounts/switch', {
      _csrf: csrf,
      account_id: agency.account.account_id,
    });
    expect(back.status).toBe(303);
    const emailsSoFar = (await smtp.waitFor(person.email, 99, 0)).length;
    const again = await signInByEmail(person.email, emailsSoFar + 1);
    expect(again.landed).toBe('/dashboard/intakes');
    expect(await accountNameOf(again.browser)).toBe(agency.account.account_id);

    // Removal from one account ends that membership's sessions only.
    await agency.api.delete(`/v1/members/${joined.id}`);
    expect((await again.browser.get('/dashboard/intakes')).status).toBe(303);
    const alone = await browser.get('/dashboard/intakes');
    expect(alone.status).toBe(303);
    const home2 = await signInByEmail(person.email, emailsSoFar + 2);
    expect(await accountNameOf(home2.browser)).toBeNull();
    expect((await home2.browser.get('/dashboard/members')).status).toBe(200);
  });

  it('a person of several accounts who used none yet chooses after the link', async () => {
    const first = await team('agency');
    const second = await team('agency');
    const email = unique('newcomer');
    const a = await invite(first.api, 'member', email);
    const b = await invite(second.api, 'viewer', email);
    // Both memberships active but never used (as after the migration, for people added by the CLI).
    await db()
      .updateTable('account_users')
      .set({ status: 'active' })
      .where('id', 'in', [a.id, b.id])
      .execute();
    const invitations = (await smtp.waitFor(email, 2)).length;
    const { browser, landed } = await signInByEmail(email, invitations + 1);
    expect(landed).toBe('/dashboard/accounts');
    const chooser = await browser.get('/dashboard/accounts');
    expect(chooser.status).toBe(200);
    expect(chooser.text).toContain(first.account.account_id);
    expect(chooser.text).toContain(second.account.account_id);
    expect(chooser.text).toContain('Member');
    expect(chooser.text).toContain('Viewer');
  });

  it('two invitations at once cannot both take the last seat', async () => {
    const { api } = await team('solo');
    await invite(api, 'member');
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        api.post('/v1/members', { email: unique(`race${i}`), role: 'viewer' }),
      ),
    );
    expect(answers.map((a) => a.status).sort()).toEqual([201, 402, 402, 402, 402, 402]);
    const listed = await api.get<{ seats: { used: number; limit: number } }>('/v1/members');
    expect(listed.body.seats).toEqual({ used: 3, limit: 3 });
  });

  it('pages show only the buttons the role may use, and the consent and device pages only its scopes', async () => {
    const { account, api } = await team('agency');
    const viewer = await invite(api, 'viewer');
    const member = await invite(api, 'member');
    const created = await api.post<{ intake_id: string }>('/v1/intakes', INTAKE);
    expect(created.status).toBe(201);
    await api.post(`/v1/intakes/${created.body.intake_id}/send`, {});
    await db()
      .updateTable('intake_items')
      .set({
        status: 'submitted',
        value_json: JSON.stringify('Hello'),
        submitted_at: new Date().toISOString(),
      })
      .where('intake_id', '=', created.body.intake_id)
      .execute();
    const asViewer = await sessionOf(account.account_id, viewer.id);
    const asMember = await sessionOf(account.account_id, member.id);
    const detail = `/dashboard/intakes/${created.body.intake_id}`;

    const viewerPage = await asViewer.get(detail);
    expect(viewerPage.status).toBe(200);
    expect(viewerPage.text).not.toContain('/approve');
    expect(viewerPage.text).not.toContain('/revision');
    expect(viewerPage.text).not.toContain(`${detail}/archive`);
    expect(viewerPage.text).not.toContain(`${detail}/edit"`);
    const memberPage = await asMember.get(detail);
    expect(memberPage.text).toContain('/approve');
    expect(memberPage.text).toContain('/revision');
    // And the server still refuses what is hidden.
    expect(
      (await asViewer.post(`${detail}/items/about/approve`, { _csrf: csrfOf(viewerPage.text) })).status,
    ).toBe(403);

    const memberSettings = await asMember.get('/dashboard/settings');
    expect(memberSettings.status).toBe(200);
    expect(memberSettings.text).not.toContain('Save settings');
    const memberUsage = await asMember.get('/dashboard/usage');
    expect(memberUsage.text).not.toContain('/dashboard/billing/');
    const viewerTemplates = await asViewer.get('/dashboard/templates');
    expect(viewerTemplates.text).not.toContain('/dashboard/templates/new');

    // Consent and device pages: a viewer is offered intakes:read only, and cannot post more.
    const started = await client(server.url).call<Body>('POST', '/oauth/device_authorization', {
      rawBody: 'client_id=intake-cli&scope=admin',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(started.status, started.text).toBe(200);
    const userCode = String(started.body.user_code);
    const devicePage = await asViewer.get(`/dashboard/device?user_code=${userCode}`);
    expect(devicePage.status).toBe(200);
    expect([...devicePage.text.matchAll(/name="scope"\s+value="([^"]+)"/g)].map((m) => m[1])).toEqual([
      'intakes:read',
    ]);
    const tooMuch = await asViewer.post('/dashboard/device', {
      _csrf: csrfOf(devicePage.text),
      user_code: userCode,
      decision: 'approve',
      scope: ['intakes:read', 'admin'],
      mode: 'test',
    });
    expect(tooMuch.status).toBe(422);
    expect(tooMuch.text).toContain('cannot give admin');
    const memberDevice = await asMember.get(`/dashboard/device?user_code=${userCode}`);
    expect([...memberDevice.text.matchAll(/name="scope"\s+value="([^"]+)"/g)].map((m) => m[1])).toEqual([
      'intakes:read',
      'intakes:write',
      'secrets:read',
    ]);
  });
});
