import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueSignInLink } from '../src/modules/sessions/sign-in.service.js';
import { DATABASES } from './helpers/env.js';
import { client } from './helpers/http.js';
import { startSmtpServer } from './helpers/mail.js';
import { csrfOf, dashboardClient, ownerEmail, signInLinkOf } from './helpers/dashboard.js';
import { signedInOwner } from './helpers/signed-in.js';
import { startTestServer, type TestServer } from './helpers/server.js';

/**
 * The access-and-abuse findings of the attack on a running server, each with the input that showed it:
 * client addresses behind a proxy (TRUST_PROXY), free plan changes in production, unbounded templates
 * and keys, sign-in email bombing, lock-out and enumeration, tokens in logs, the open redirect, the
 * cookie without Secure and the data directory's permissions.
 */

/** A sign-in form post with a chosen X-Forwarded-For (a fresh pre-session per call, like a new browser). */
async function askForLink(url: string, email: string, forwardedFor?: string): Promise<number> {
  const browser = dashboardClient(url);
  const form = await browser.get('/dashboard/sign-in');
  const cookie = [...browser.jar].map(([name, value]) => `${name}=${value}`).join('; ');
  const response = await fetch(`${url}/dashboard/sign-in`, {
    method: 'POST',
    headers: {
      cookie,
      'content-type': 'application/x-www-form-urlencoded',
      ...(forwardedFor ? { 'x-forwarded-for': forwardedFor } : {}),
    },
    body: new URLSearchParams({ email, _csrf: csrfOf(form.text) }).toString(),
    redirect: 'manual',
  });
  await response.arrayBuffer();
  return response.status;
}

/** Sign-in emails are jobs: waits (bounded) until none is pending or running. */
async function signInJobsDone(server: TestServer): Promise<void> {
  const deadline = Date.now() + 15_000;
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

describe.each(DATABASES)('access and abuse on %s', (database) => {
  let server: TestServer;
  let proxied: TestServer;
  let smtp: Awaited<ReturnType<typeof startSmtpServer>>;

  beforeAll(async () => {
    smtp = await startSmtpServer();
    server = await startTestServer(database, { SMTP_URL: smtp.url });
    // The tests connect from loopback: that is the proxy here.
    proxied = await startTestServer(database, { SMTP_URL: smtp.url, TRUST_PROXY: '127.0.0.1' });
  });
  afterAll(async () => {
    await server?.stop();
    await proxied?.stop();
    await smtp?.close();
  });

  it('counts forwarded addresses only from a trusted proxy (TRUST_PROXY)', async () => {
    // Behind the trusted proxy, 31 clients at 31 addresses each get their own per-address allowance.
    const behindProxy: number[] = [];
    for (let i = 0; i < 31; i++) {
      behindProxy.push(await askForLink(proxied.url, `nobody-${i}@example.com`, `203.0.113.${i + 1}`));
    }
    expect(behindProxy.every((status) => status === 200)).toBe(true);
    // Without TRUST_PROXY the header is the client's say-so: 31 requests from one socket share one limit.
    const direct: number[] = [];
    for (let i = 0; i < 31; i++) {
      direct.push(await askForLink(server.url, `nobody-${i}@example.com`, `198.51.100.${i + 1}`));
    }
    expect(direct.slice(0, 30).every((status) => status === 200)).toBe(true);
    expect(direct[30]).toBe(429);
  });

  it('sends one sign-in email per address in a minute, and a stranger cannot lock the user out', async () => {
    const account = await proxied.createAccount();
    const email = await ownerEmail(proxied, account.account_id);
    // A stranger asks 40 times for the user's address from one network address.
    const stranger: number[] = [];
    for (let i = 0; i < 40; i++) stranger.push(await askForLink(proxied.url, email, '192.0.2.66'));
    expect(stranger.filter((status) => status === 200)).toHaveLength(30);
    expect(stranger.slice(30).every((status) => status === 429)).toBe(true);
    await signInJobsDone(proxied);
    // The user, from their own address, is answered as always...
    expect(await askForLink(proxied.url, email, '192.0.2.10')).toBe(200);
    await signInJobsDone(proxied);
    // ...and their mailbox got one email, whose link signs them in.
    const mails = smtp.received.filter((m) => m.envelopeTo.includes(email));
    expect(mails).toHaveLength(1);
    const link = new URL(signInLinkOf(mails[0]?.parsed.text ?? ''));
    const browser = dashboardClient(proxied.url);
    const landing = await browser.get(link.pathname + link.search);
    const confirmed = await browser.post('/dashboard/sign-in/confirm', {
      token: link.searchParams.get('token') ?? '',
      _csrf: csrfOf(landing.text),
    });
    expect(confirmed.status).toBe(303);
    // A used link holds no cool-down: signing in again sends a new one at once.
    expect(await askForLink(proxied.url, email, '192.0.2.10')).toBe(200);
    expect(await smtp.waitFor(email, 2)).toHaveLength(2);
  });

  it('answers a sign-in request the same way for any address: it only queues the email', async () => {
    const quiet = await startTestServer(database, { SMTP_URL: smtp.url }, { runWorker: false });
    try {
      const account = await quiet.createAccount();
      const known = await ownerEmail(quiet, account.account_id);
      const unknown = `nobody-${Math.random().toString(36).slice(2)}@example.com`;
      expect(await askForLink(quiet.url, known)).toBe(200);
      expect(await askForLink(quiet.url, unknown)).toBe(200);
      const db = quiet.server.services.db.kysely;
      // Nothing was looked up or sent during the requests: one queued job each, no link yet.
      const jobs = await db.selectFrom('jobs').select(['kind', 'payload']).execute();
      expect(jobs.filter((job) => job.kind === 'send_sign_in_link')).toHaveLength(2);
      expect(await db.selectFrom('sign_in_tokens').select('token_hash').execute()).toHaveLength(0);
      expect(smtp.received.filter((m) => m.envelopeTo.includes(known))).toHaveLength(0);
      // The worker then sends to the user's address only.
      expect(await quiet.server.worker.runDue()).toBe(2);
      expect(await smtp.waitFor(known)).toHaveLength(1);
      expect(smtp.received.filter((m) => m.envelopeTo.includes(unknown))).toHaveLength(0);
    } finally {
      await quiet.stop();
    }
  });

  it('pages GET /v1/templates and caps templates per plan', async () => {
    const account = await server.createAccount({ plan: 'free' });
    const api = client(server.url, account.live_key);
    const pricing = await client(server.url).get<{
      plans: { id: string; features: { max_templates: number; max_api_keys: number } }[];
    }>('/pricing.json');
    const free = pricing.body.plans.find((plan) => plan.id === 'free');
    expect(free?.features.max_templates).toBe(10);
    const items = [{ key: 'logo', label: 'Logo', type: 'file' }];
    const created: string[] = [];
    for (let i = 0; i < 10; i++) {
      const template = await api.post<{ id: string }>('/v1/templates', { name: `T${i}`, items });
      expect(template.status).toBe(201);
      created.push(template.body.id);
    }
    const over = await api.post<{ error: string; limit: number }>('/v1/templates', { name: 'T10', items });
    expect(over.status).toBe(402);
    expect(over.body).toMatchObject({ error: 'plan_required', limit: 10 });
    // Pages of 4, newest first, until has_more is false.
    const seen: string[] = [];
    let after: string | undefined;
    for (;;) {
      const page = await api.get<{ templates: { id: string }[]; has_more: boolean }>(
        `/v1/templates?limit=4${after ? `&starting_after=${after}` : ''}`,
      );
      expect(page.status).toBe(200);
      seen.push(...page.body.templates.map((t) => t.id));
      after = page.body.templates.at(-1)?.id;
      if (!page.body.has_more) break;
    }
    expect(seen).toEqual([...created].reverse());
    expect((await api.get<{ templates: unknown[] }>('/v1/templates')).body.templates).toHaveLength(10);
    expect((await api.get('/v1/templates?limit=101')).status).toBe(400);
    // Another account's template is no cursor here.
    const other = await server.createAccount();
    const theirs = await client(server.url, other.live_key).post<{ id: string }>('/v1/templates', {
      name: 'Theirs',
      items,
    });
    expect((await api.get(`/v1/templates?starting_after=${theirs.body.id}`)).status).toBe(400);
  });

  it('caps the API keys an account can hold per plan', async () => {
    const account = await server.createAccount({ plan: 'free' });
    const api = client(server.url, account.live_key);
    // Two keys come with the account; the free plan holds five.
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) {
      statuses.push((await api.post('/v1/keys', { name: `k${i}`, scopes: ['intakes:read'] })).status);
    }
    expect(statuses).toEqual([201, 201, 201, 402]);
    const keys = await api.get<{ keys: { id: string; name: string }[] }>('/v1/keys');
    const spare = keys.body.keys.find((key) => key.name === 'k0');
    expect((await api.delete(`/v1/keys/${spare?.id ?? ''}`)).status).toBe(204);
    expect((await api.post('/v1/keys', { name: 'again', scopes: ['intakes:read'] })).status).toBe(201);
  });

  it('keeps every return_to on this site: tabs, newlines and backslashes included', async () => {
    const account = await server.createAccount();
    const owner = await signedInOwner(server, account.account_id);
    for (const hostile of [
      '/%09/evil.example',
      '/%0A/evil.example',
      '/%0D%0A/evil.example',
      '/%5C/evil.example',
      '//evil.example',
      '/%09%09/evil.example',
    ]) {
      const response = await owner.get(`${server.url}/dashboard/sign-in?return_to=${hostile}`);
      await response.arrayBuffer();
      expect(response.status, hostile).toBe(303);
      expect(response.headers.get('location'), hostile).toBe('/dashboard/intakes');
    }
    const kept = await owner.get(`${server.url}/dashboard/sign-in?return_to=%2Fdashboard%2Fkeys`);
    expect(kept.headers.get('location')).toBe('/dashboard/keys');
    const page = await (await owner.get(`${server.url}/dashboard/intakes`)).text();
    const switched = await owner.postForm(`${server.url}/dashboard/mode`, {
      _csrf: csrfOf(page),
      mode: 'test',
      return_to: '/\t/evil.example',
    });
    expect(switched.status).toBe(303);
    expect(switched.headers.get('location')).toMatch(/^\/dashboard\/intakes\?notice=mode$/);
  });
});

describe.each(DATABASES)('production settings on %s', (database) => {
  let server: TestServer;

  beforeAll(async () => {
    // An http APP_URL, no Stripe keys, no SMTP_URL: what a first production install often looks like.
    server = await startTestServer(database, {
      NODE_ENV: 'production',
      SECRET_KEY: 'access-test-secret-key-0123456789abcdef',
    });
  });
  afterAll(async () => server?.stop());

  it('refuses plan changes without payment unless BILLING_ALLOW_LOCAL=on', async () => {
    const account = await server.createAccount({ plan: 'free' });
    const api = client(server.url, account.live_key);
    const checkout = await api.post<{ error: string; message: string }>('/v1/billing/checkout', {
      plan: 'agency',
    });
    expect(checkout.status).toBe(503);
    expect(checkout.body.message).toContain('STRIPE_SECRET_KEY');
    expect((await api.post('/v1/billing/portal', {})).status).toBe(503);
    const allowed = await startTestServer(database, {
      NODE_ENV: 'production',
      SECRET_KEY: 'access-test-secret-key-0123456789abcdef',
      BILLING_ALLOW_LOCAL: 'on',
    });
    try {
      const theirs = await allowed.createAccount({ plan: 'free' });
      const open = await client(allowed.url, theirs.live_key).post<{ provider: string }>(
        '/v1/billing/checkout',
        { plan: 'agency' },
      );
      expect(open.status).toBe(200);
      expect(open.body.provider).toBe('local');
    } finally {
      await allowed.stop();
    }
  });

  it('says on the sign-in form that email sign-in needs SMTP_URL, and sends nothing', async () => {
    const account = await server.createAccount();
    const email = await ownerEmail(server, account.account_id);
    const browser = dashboardClient(server.url);
    const form = await browser.get('/dashboard/sign-in');
    const sent = await browser.post('/dashboard/sign-in', { email, _csrf: csrfOf(form.text) });
    expect(sent.status).toBe(503);
    expect(sent.text).toContain('SMTP_URL');
    const db = server.server.services.db.kysely;
    expect(
      await db.selectFrom('jobs').select('id').where('kind', '=', 'send_sign_in_link').execute(),
    ).toHaveLength(0);
    expect(
      await db.selectFrom('messages').select('id').where('to_address', '=', email).execute(),
    ).toHaveLength(0);
  });

  it("gives the operator a link without a mail server (the sign-in-link command's service)", async () => {
    const account = await server.createAccount();
    const email = await ownerEmail(server, account.account_id);
    expect(await issueSignInLink(server.server.services, 'nobody@example.com')).toBeUndefined();
    const link = new URL((await issueSignInLink(server.server.services, email.toUpperCase())) ?? '');
    const browser = dashboardClient(server.url);
    const landing = await browser.get(link.pathname + link.search);
    const confirmed = await browser.post('/dashboard/sign-in/confirm', {
      token: link.searchParams.get('token') ?? '',
      _csrf: csrfOf(landing.text),
    });
    expect(confirmed.status).toBe(303);
  });

  it('marks cookies Secure (and __Host-) in production, even on an http APP_URL', async () => {
    const response = await fetch(`${server.url}/dashboard/sign-in`);
    await response.arrayBuffer();
    const cookies = response.headers.getSetCookie();
    expect(cookies.length).toBeGreaterThan(0);
    for (const cookie of cookies) {
      expect(cookie).toMatch(/^__Host-/);
      expect(cookie).toMatch(/; Secure/);
    }
  });
});

describe('the data directory', () => {
  it('is 0700 and the SQLite database 0600, whatever the umask, a new directory or an existing one', async () => {
    const parent = await mkdtemp(join(tmpdir(), 'intake-perm-'));
    const fresh = join(parent, 'data');
    const server = await startTestServer('sqlite', { DATA_DIR: fresh });
    try {
      expect((await stat(fresh)).mode & 0o777).toBe(0o700);
      for (const file of ['intake.sqlite', 'intake.sqlite-wal', 'secret.key']) {
        expect((await stat(join(fresh, file))).mode & 0o777, file).toBe(0o600);
      }
    } finally {
      await server.stop();
    }
    // An existing world-readable directory and database are tightened at start.
    const { chmod } = await import('node:fs/promises');
    await chmod(fresh, 0o755);
    await chmod(join(fresh, 'intake.sqlite'), 0o644);
    const again = await startTestServer('sqlite', { DATA_DIR: fresh });
    try {
      expect((await stat(fresh)).mode & 0o777).toBe(0o700);
      expect((await stat(join(fresh, 'intake.sqlite'))).mode & 0o777).toBe(0o600);
    } finally {
      await again.stop();
      await rm(parent, { recursive: true, force: true });
    }
  });
});
