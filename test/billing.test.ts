import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PLANS } from '../src/domain/plans.js';
import { planChangeForm } from '../src/modules/billing/billing.pages.js';
import { DATABASES } from './helpers/env.js';
import { client, type Client } from './helpers/http.js';
import { expectError, expectSecured } from './helpers/security.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { hiddenField, signedInOwner, type SignedInBrowser } from './helpers/signed-in.js';

type Body = Record<string, unknown>;

const ITEMS = [{ key: 'about', label: 'About your company', type: 'longtext' }];
/** A custom chase schedule: a feature of Solo and Agency, not of Free (402 plan_required). */
const CUSTOM_SCHEDULE_INTAKE = {
  project_name: 'Website refresh',
  client: { email: 'dana@example.test' },
  items: ITEMS,
  chase_schedule: 'custom',
  chase_interval: 2,
  chase_interval_unit: 'days',
};

async function accountOf(server: TestServer, plan: 'free' | 'solo' | 'agency' = 'free') {
  const created = await server.createAccount({ plan });
  return {
    id: created.account_id,
    live: client(server.url, created.live_key),
    test: client(server.url, created.test_key),
  };
}

async function rateLimitOf(api: Client): Promise<number> {
  const usage = await api.get<Body>('/v1/usage');
  expect(usage.status, usage.text).toBe(200);
  expect(Number(usage.headers.get('x-ratelimit-limit'))).toBe(usage.body.rate_limit_per_hour);
  return usage.body.rate_limit_per_hour as number;
}

async function planOf(api: Client): Promise<string> {
  return (await api.get<Body>('/v1/account')).body.plan as string;
}

/** A page's CSRF token for this browser (the device approval page carries one, like every dashboard form). */
async function csrfOf(server: TestServer, browser: SignedInBrowser): Promise<string> {
  const started = await client(server.url).call<Body>('POST', '/oauth/device_authorization', {
    rawBody: 'client_id=intake-cli',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
  });
  const page = await browser.get(
    `${server.url}/dashboard/device?user_code=${started.body.user_code as string}`,
  );
  return hiddenField(await page.text(), '_csrf');
}

function postForm(url: string, fields: Record<string, string>): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields).toString(),
    redirect: 'manual',
  });
}

describe.each(DATABASES)('billing with the local provider on %s', (database) => {
  let server: TestServer;
  let appUrl: string;

  beforeAll(async () => {
    server = await startTestServer(database);
    appUrl = server.server.services.config.appUrl;
  });
  afterAll(async () => {
    await server.stop();
  });

  it('checkout: the local page applies Free → Solo at once (rate limit, features, audit)', async () => {
    const account = await accountOf(server);
    expect(await rateLimitOf(account.live)).toBe(60);
    expectError(await account.test.post('/v1/intakes', CUSTOM_SCHEDULE_INTAKE), 402, 'plan_required');

    const checkout = await account.live.post<Body>('/v1/billing/checkout', { plan: 'solo' });
    expect(checkout.status, checkout.text).toBe(200);
    expect(checkout.body.provider).toBe('local');
    const url = checkout.body.url as string;
    expect(url.startsWith(`${appUrl}/billing/local/bcs_`)).toBe(true);

    const page = await fetch(url);
    expect(page.status).toBe(200);
    const text = await page.text();
    expect(text).toContain('Solo');
    expect(text).toContain(`<form method="post" action="${new URL(url).pathname}"`);
    // Opening the page changes nothing.
    expect(await planOf(account.live)).toBe('free');

    const confirmed = await postForm(url, { decision: 'confirm' });
    expect(confirmed.status).toBe(303);
    expect(confirmed.headers.get('location')).toBe(`${appUrl}/dashboard`);

    expect(await planOf(account.live)).toBe('solo');
    expect(await rateLimitOf(account.live)).toBe(600);
    expect(await rateLimitOf(account.test)).toBe(600);
    const created = await account.test.post<Body>('/v1/intakes', CUSTOM_SCHEDULE_INTAKE);
    expect(created.status, created.text).toBe(201);

    // The link works once.
    expect((await postForm(url, {})).status).toBe(410);
    expect(await planOf(account.live)).toBe('solo');

    const audit = await account.live.get<{ entries: Body[] }>('/v1/audit?limit=20');
    const actions = audit.body.entries.map((entry) => entry.action);
    expect(actions).toContain('account.plan_changed');
    expect(actions).toContain('billing.checkout');
    const change = audit.body.entries.find((entry) => entry.action === 'account.plan_changed');
    expect(change?.actor).toEqual({ type: 'system', id: 'billing:local_checkout' });

    const events = await server.server.services.db.kysely
      .selectFrom('events')
      .select(['type', 'payload'])
      .where('account_id', '=', account.id)
      .where('type', '=', 'account.plan_changed')
      .execute();
    expect(events).toHaveLength(1);
    expect(JSON.parse(events[0]?.payload ?? '{}')).toMatchObject({ previous_plan: 'free', plan: 'solo' });
  });

  it('portal: the local page moves to any plan, free included', async () => {
    const account = await accountOf(server, 'agency');
    const portal = await account.live.post<Body>('/v1/billing/portal', {
      return_url: `${appUrl}/dashboard/usage`,
    });
    expect(portal.status, portal.text).toBe(200);
    const url = portal.body.url as string;
    expect(url.startsWith(`${appUrl}/billing/local/bps_`)).toBe(true);
    const page = await (await fetch(url)).text();
    expect(page).toMatch(/<input type="radio" name="plan" value="agency"\s+checked/);

    expect((await postForm(url, { plan: 'enterprise' })).status).toBe(422);
    const saved = await postForm(url, { plan: 'free' });
    expect(saved.status).toBe(303);
    expect(saved.headers.get('location')).toBe(`${appUrl}/dashboard/usage`);
    expect(await planOf(account.live)).toBe('free');
    expect(await rateLimitOf(account.live)).toBe(60);
  });

  it("the dashboard's upgrade button (planChangeForm: session + CSRF) leads through the local checkout", async () => {
    const account = await accountOf(server);
    const browser = await signedInOwner(server, account.id);
    // The form the dashboard renders, submitted as a browser would.
    const form = planChangeForm('solo', await csrfOf(server, browser), '/dashboard/usage').value;
    expect(form).toContain('action="/dashboard/billing/checkout"');
    const fields = {
      _csrf: hiddenField(form, '_csrf'),
      plan: hiddenField(form, 'plan'),
      return_to: hiddenField(form, 'return_to'),
    };
    expect(fields.plan).toBe('solo');

    expect(
      (await browser.postForm(`${server.url}/dashboard/billing/checkout`, { ...fields, _csrf: 'forged' }))
        .status,
    ).toBe(403);
    const signedOut = await postForm(`${server.url}/dashboard/billing/checkout`, fields);
    expect(signedOut.status).toBe(303);
    expect(signedOut.headers.get('location')).toMatch(/^\/dashboard\/sign-in/);

    const started = await browser.postForm(`${server.url}/dashboard/billing/checkout`, fields);
    expect(started.status).toBe(303);
    const checkoutUrl = started.headers.get('location') ?? '';
    expect(checkoutUrl.startsWith(`${appUrl}/billing/local/bcs_`)).toBe(true);
    expect((await fetch(checkoutUrl)).status).toBe(200);
    const done = await postForm(checkoutUrl, {});
    expect(done.headers.get('location')).toBe(`${appUrl}/dashboard/usage`);
    expect(await planOf(account.live)).toBe('solo');
    expect(await rateLimitOf(account.live)).toBe(600);

    const audit = await account.live.get<{ entries: Body[] }>('/v1/audit?limit=20');
    expect(audit.body.entries.find((entry) => entry.action === 'billing.checkout')?.actor).toEqual({
      type: 'user',
      id: browser.userId,
    });
    // Already on Solo: the button answers with a page saying so, not a second checkout.
    const again = await browser.postForm(`${server.url}/dashboard/billing/checkout`, fields);
    expect(again.status).toBe(409);
    expect(await again.text()).toContain('already on the Solo plan');
  });

  it('refuses what makes no sense, and secures the endpoints', async () => {
    const account = await accountOf(server, 'solo');
    expectError(await account.live.post('/v1/billing/checkout', { plan: 'solo' }), 409, 'conflict');
    expectError(await account.live.post('/v1/billing/checkout', { plan: 'free' }), 400, 'invalid_request');
    expectError(
      await account.live.post('/v1/billing/checkout', { plan: 'agency', coupon: 'x' }),
      400,
      'invalid_request',
    );
    expectError(
      await account.live.post('/v1/billing/checkout', {
        plan: 'agency',
        return_url: 'https://evil.example/x',
      }),
      400,
      'invalid_request',
    );
    expectError(await account.test.post('/v1/billing/checkout', { plan: 'agency' }), 403, 'forbidden');
    expectError(await account.test.post('/v1/billing/portal'), 403, 'forbidden');

    const readOnly = await account.live.post<Body>('/v1/keys', { name: 'reader', scopes: ['intakes:read'] });
    const reader = client(server.url, readOnly.body.key as string);
    const anonymous = client(server.url);
    await expectSecured(anonymous, reader, 'POST', '/v1/billing/checkout', { plan: 'agency' });
    await expectSecured(anonymous, reader, 'POST', '/v1/billing/portal', {});

    expect((await fetch(`${appUrl}/billing/local/bcs_doesnotexist0000000000`)).status).toBe(404);
    // No Stripe keys: the Stripe webhook does not exist here.
    expectError(await anonymous.post('/v1/billing/stripe_webhook', { id: 'evt_1' }), 404, 'not_found');
    expect(await planOf(account.live)).toBe('solo');
  });
});

/** What the fake Stripe API received: method, path and the form-encoded body, flattened. */
interface StripeCall {
  method: string;
  path: string;
  authorization: string | undefined;
  params: Record<string, string>;
}

/** A loopback HTTP server answering like Stripe's API for the calls the service makes. */
async function startFakeStripe(): Promise<{ url: string; calls: StripeCall[]; server: Server }> {
  const calls: StripeCall[] = [];
  const readBody = async (request: IncomingMessage) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString();
  };
  const server = createServer((request, response) => {
    void readBody(request).then((body) => {
      const path = request.url ?? '';
      calls.push({
        method: request.method ?? '',
        path,
        authorization: request.headers.authorization,
        params: Object.fromEntries(new URLSearchParams(body)),
      });
      response.setHeader('content-type', 'application/json');
      response.setHeader('request-id', `req_fake_${calls.length}`);
      if (request.method === 'POST' && path === '/v1/checkout/sessions') {
        response.end(
          JSON.stringify({
            id: 'cs_test_1',
            object: 'checkout.session',
            mode: 'subscription',
            url: 'https://checkout.stripe.test/c/pay/cs_test_1',
          }),
        );
      } else if (request.method === 'POST' && path === '/v1/billing_portal/sessions') {
        response.end(
          JSON.stringify({
            id: 'bps_test_1',
            object: 'billing_portal.session',
            url: 'https://billing.stripe.test/p/session/test_1',
          }),
        );
      } else {
        response.statusCode = 404;
        response.end(
          JSON.stringify({ error: { type: 'invalid_request_error', message: 'Unrecognized request URL' } }),
        );
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, calls, server };
}

const WEBHOOK_SECRET = 'whsec_test_0123456789abcdef';

function stripeEvent(type: string, object: Body): string {
  return JSON.stringify({
    id: `evt_${Math.random().toString(36).slice(2)}`,
    object: 'event',
    api_version: '2025-01-01',
    created: Math.floor(Date.now() / 1000),
    type,
    data: { object },
  });
}

function subscription(accountId: string, status: string, lookupKey: string): Body {
  return {
    id: 'sub_test_1',
    object: 'subscription',
    customer: 'cus_test_1',
    status,
    metadata: { account_id: accountId, plan: 'solo' },
    items: { object: 'list', data: [{ id: 'si_1', price: { id: 'price_x', lookup_key: lookupKey } }] },
  };
}

describe.each(DATABASES)('billing with Stripe (a loopback Stripe API) on %s', (database) => {
  let server: TestServer;
  let stripe: Awaited<ReturnType<typeof startFakeStripe>>;
  let anonymous: Client;

  beforeAll(async () => {
    stripe = await startFakeStripe();
    server = await startTestServer(database, {
      STRIPE_SECRET_KEY: 'sk_test_fake_0123456789',
      STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET,
      STRIPE_API_URL: stripe.url,
    });
    anonymous = client(server.url);
  });
  afterAll(async () => {
    await server.stop();
    await new Promise((resolve) => stripe.server.close(resolve));
  });

  const deliver = (
    payload: string,
    signature = Stripe.webhooks.generateTestHeaderString({ payload, secret: WEBHOOK_SECRET }),
  ) =>
    anonymous.call<Body>('POST', '/v1/billing/stripe_webhook', {
      rawBody: payload,
      headers: { 'content-type': 'application/json', 'stripe-signature': signature },
    });

  it('checkout, completion, subscription updates and cancellation, all signed by Stripe', async () => {
    const account = await accountOf(server);
    expectError(await account.live.post('/v1/billing/portal'), 409, 'conflict');

    const checkout = await account.live.post<Body>('/v1/billing/checkout', { plan: 'solo' });
    expect(checkout.status, checkout.text).toBe(200);
    expect(checkout.body).toEqual({
      url: 'https://checkout.stripe.test/c/pay/cs_test_1',
      provider: 'stripe',
    });
    const created = stripe.calls.find((call) => call.path === '/v1/checkout/sessions');
    expect(created?.authorization).toBe('Bearer sk_test_fake_0123456789');
    expect(created?.params).toMatchObject({
      mode: 'subscription',
      client_reference_id: account.id,
      'metadata[plan]': 'solo',
      'subscription_data[metadata][account_id]': account.id,
      'line_items[0][price_data][unit_amount]': '2900',
      'line_items[0][price_data][recurring][interval]': 'month',
    });
    // Nothing changes until Stripe says the checkout completed.
    expect(await planOf(account.live)).toBe('free');

    const completed = await deliver(
      stripeEvent('checkout.session.completed', {
        id: 'cs_test_1',
        object: 'checkout.session',
        mode: 'subscription',
        client_reference_id: account.id,
        customer: 'cus_test_1',
        subscription: 'sub_test_1',
        metadata: { account_id: account.id, plan: 'solo' },
      }),
    );
    expect(completed.status, completed.text).toBe(200);
    expect(completed.body).toEqual({ received: true, handled: true });
    expect(await planOf(account.live)).toBe('solo');
    expect(await rateLimitOf(account.live)).toBe(600);

    // A second checkout would be a second subscription: the portal is the way.
    expectError(await account.live.post('/v1/billing/checkout', { plan: 'agency' }), 409, 'conflict');
    const portal = await account.live.post<Body>('/v1/billing/portal', {});
    expect(portal.status, portal.text).toBe(200);
    expect(portal.body.url).toBe('https://billing.stripe.test/p/session/test_1');
    expect(stripe.calls.find((call) => call.path === '/v1/billing_portal/sessions')?.params.customer).toBe(
      'cus_test_1',
    );

    // The customer switched to Agency in Stripe's portal.
    const upgrade = stripeEvent(
      'customer.subscription.updated',
      subscription(account.id, 'active', 'agency'),
    );
    const tampered = upgrade.replace('"agency"', '"solo"');
    const signature = Stripe.webhooks.generateTestHeaderString({ payload: upgrade, secret: WEBHOOK_SECRET });
    expectError(await deliver(tampered, signature), 400, 'invalid_request');
    expectError(
      await deliver(
        upgrade,
        Stripe.webhooks.generateTestHeaderString({ payload: upgrade, secret: 'whsec_other' }),
      ),
      400,
      'invalid_request',
    );
    expect(await planOf(account.live)).toBe('solo');
    expect((await deliver(upgrade, signature)).status).toBe(200);
    expect(await planOf(account.live)).toBe('agency');
    expect(await rateLimitOf(account.live)).toBe(3000);
    // Stripe retries: the same event again changes nothing more.
    expect((await deliver(upgrade, signature)).status).toBe(200);

    const ended = await deliver(
      stripeEvent('customer.subscription.deleted', subscription(account.id, 'canceled', 'agency')),
    );
    expect(ended.status).toBe(200);
    expect(await planOf(account.live)).toBe('free');
    expect(await rateLimitOf(account.live)).toBe(60);

    // A new subscription; late news of the old one does not undo it.
    await deliver(
      stripeEvent('checkout.session.completed', {
        id: 'cs_test_2',
        object: 'checkout.session',
        mode: 'subscription',
        client_reference_id: account.id,
        customer: 'cus_test_1',
        subscription: 'sub_test_2',
        metadata: { account_id: account.id, plan: 'agency' },
      }),
    );
    expect(await planOf(account.live)).toBe('agency');
    const late = await deliver(
      stripeEvent('customer.subscription.updated', subscription(account.id, 'canceled', 'solo')),
    );
    expect(late.body).toEqual({ received: true, handled: false });
    expect(await planOf(account.live)).toBe('agency');

    const changes = await account.live.get<{ entries: Body[] }>('/v1/audit?limit=50');
    expect(
      changes.body.entries
        .filter((entry) => entry.action === 'account.plan_changed')
        .map((entry) => entry.actor),
    ).toEqual([
      { type: 'system', id: 'billing:stripe' },
      { type: 'system', id: 'billing:stripe' },
      { type: 'system', id: 'billing:stripe' },
      { type: 'system', id: 'billing:stripe' },
    ]);
  });

  it('rejects unsigned events and acknowledges events it does not handle', async () => {
    const payload = stripeEvent('invoice.paid', { id: 'in_1', object: 'invoice' });
    expectError(
      await anonymous.call('POST', '/v1/billing/stripe_webhook', {
        rawBody: payload,
        headers: { 'content-type': 'application/json' },
      }),
      400,
      'invalid_request',
    );
    const answer = await deliver(payload);
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ received: true, handled: false });
  });
});

describe('the README plan table', () => {
  it('shows the numbers of the plan table (src/domain/plans.ts, /pricing.json)', () => {
    const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
    const GiB = 1024 ** 3;
    const MiB = 1024 ** 2;
    const size = (bytes: number) => (bytes >= GiB ? `${bytes / GiB} GiB` : `${bytes / MiB} MiB`);
    const yesNo = (on: boolean) => (on ? 'yes' : 'no');
    for (const plan of Object.values(PLANS)) {
      const row = readme.split('\n').find((line) => line.startsWith(`| ${plan.name} `));
      const cells = row
        ?.split('|')
        .slice(1, -1)
        .map((cell) => cell.trim());
      expect(cells, plan.name).toEqual([
        plan.name,
        `$${plan.price_monthly_usd}`,
        String(plan.rate_limit_per_hour),
        String(plan.quotas.intakes_per_month),
        size(plan.quotas.storage_bytes),
        String(plan.quotas.sms_per_month),
        size(plan.max_file_bytes),
        yesNo(plan.features.sms_chases),
        yesNo(plan.features.custom_chase_schedules),
        yesNo(plan.features.custom_branding),
        String(plan.features.max_webhook_endpoints),
      ]);
    }
  });
});
