import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { emitEvent } from '../src/kernel/public-events.js';
import { verifySignature } from '../src/modules/webhooks/verify.js';
import { DATABASES } from './helpers/env.js';
import { client, type Client } from './helpers/http.js';
import { answer, eventually, startReceiver, type Receiver, type Received } from './helpers/receivers.js';
import { expectError, expectSecured } from './helpers/security.js';
import { startTestServer, type TestServer } from './helpers/server.js';

type Body = Record<string, unknown>;
interface Endpoint {
  id: string;
  url: string;
  events: string[];
  secret?: string;
  status: string;
  format: string;
}
interface Attempt {
  id: string;
  delivery_id: string;
  event_id: string;
  event: string;
  test: boolean;
  attempt: number;
  outcome: string;
  response_status: number | null;
  response_excerpt: string | null;
  error: string | null;
  delivery_status: string;
  next_attempt_at: string | null;
}

const ALL_EVENTS = [
  'intake.sent',
  'intake.viewed',
  'intake.complete',
  'item.submitted',
  'item.approved',
  'item.revision_requested',
  'chase.sent',
  'intake.completed',
  'client.viewed',
  'chase.bounced',
  'intake.stalled',
  'intake.overdue',
  'chase.opted_out',
];

const ITEMS = [
  { key: 'tagline', label: 'Tagline', type: 'text', constraints: { max_chars: 60 } },
  { key: 'about', label: 'About you', type: 'longtext' },
  { key: 'extras', label: 'Anything else', type: 'longtext', required: false },
];

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

/** stripe-node's verifier: an independent implementation of the same scheme. */
function stripeVerify(payload: string, header: string, secret: string, tolerance: number): boolean {
  const signature = Stripe.webhooks.signature;
  if (!signature) throw new Error('stripe-node has no webhooks.signature');
  return signature.verifyHeader(payload, header, secret, tolerance);
}

function parse(request: Received): Body {
  return JSON.parse(request.body) as Body;
}

/** Both headers, identical, accepted by stripe-node and by our helper. */
function expectSigned(request: Received, secret: string): void {
  const header = request.headers['service-signature'];
  expect(typeof header).toBe('string');
  expect(request.headers['x-service-signature']).toBe(header);
  expect(header).toMatch(/^t=\d+(,v1=[0-9a-f]{64})+$/);
  expect(stripeVerify(request.body, header as string, secret, 300)).toBe(true);
  expect(verifySignature(request.body, header as string, secret)).toBe(true);
  expect(verifySignature(request.body + ' ', header as string, secret)).toBe(false);
}

describe.each(DATABASES)('webhooks: endpoints, events and signatures on %s', (database) => {
  let server: TestServer;
  let live: Client;
  let test: Client;
  let receiver: Receiver;

  beforeAll(async () => {
    server = await startTestServer(database);
    const account = await server.createAccount({ plan: 'agency' });
    live = client(server.url, account.live_key);
    test = client(server.url, account.test_key);
    receiver = await startReceiver(answer(200, 'thanks'));
  });
  afterAll(async () => {
    await receiver.close();
    await server.stop();
  });

  async function register(api: Client, body: Body): Promise<Endpoint> {
    const created = await api.post<Endpoint>('/v1/webhooks', body);
    expect(created.status, created.text).toBe(201);
    return created.body;
  }

  it('registers, lists without secrets, and deletes endpoints', async () => {
    const created = await register(live, {
      url: receiver.url,
      events: ['item.submitted', 'intake.completed'],
    });
    expect(created).toMatchObject({
      id: expect.stringMatching(/^wh_/),
      url: receiver.url,
      events: ['item.submitted', 'intake.completed'],
      secret: expect.stringMatching(/^whsec_[0-9A-Za-z]{32}$/),
      format: 'raw',
      status: 'enabled',
      created_at: expect.stringMatching(ISO),
    });
    const supplied = 'whsec_' + 'S'.repeat(32);
    const withSecret = await register(live, { url: receiver.url, events: ['intake.sent'], secret: supplied });
    expect(withSecret.secret).toBe(supplied);

    const listed = await live.get<{ webhooks: Endpoint[] }>('/v1/webhooks');
    expect(listed.status).toBe(200);
    expect(listed.body.webhooks.map((w) => w.id)).toEqual([withSecret.id, created.id]);
    expect(listed.text).not.toContain('whsec_');
    // Test mode is another world.
    expect((await test.get<{ webhooks: Endpoint[] }>('/v1/webhooks')).body.webhooks).toEqual([]);
    expectError(await test.delete(`/v1/webhooks/${created.id}`), 404, 'not_found');

    expect((await live.delete(`/v1/webhooks/${withSecret.id}`)).status).toBe(204);
    expectError(await live.get(`/v1/webhooks/${withSecret.id}/deliveries`), 404, 'not_found');
    expect((await live.delete(`/v1/webhooks/${created.id}`)).status).toBe(204);
    expect((await live.get<{ webhooks: Endpoint[] }>('/v1/webhooks')).body.webhooks).toEqual([]);
  });

  it('refuses unknown event names (422, naming them), bad secrets and fields, and endpoints beyond the plan', async () => {
    const unknown = await live.post<Body>('/v1/webhooks', {
      url: receiver.url,
      events: ['item.submitted', 'intake.exploded', 'foo'],
    });
    expectError(unknown, 422, 'unprocessable');
    expect(unknown.body.message).toContain('intake.exploded');
    expect(unknown.body.message).toContain('foo');
    expect(unknown.body.unknown_events).toEqual(['intake.exploded', 'foo']);
    expectError(
      await live.post('/v1/webhooks', { url: receiver.url, events: ['intake.sent'], secret: 'hunter2' }),
      400,
      'invalid_request',
    );
    expectError(
      await live.post('/v1/webhooks', { url: 'ftp://x.example/', events: ['intake.sent'] }),
      400,
      'invalid_request',
    );
    expectError(await live.post('/v1/webhooks', { url: receiver.url, events: [] }), 400, 'invalid_request');
    const typo = await live.post<Body>('/v1/webhooks', {
      url: receiver.url,
      events: ['intake.sent'],
      event: 'x',
    });
    expectError(typo, 400, 'invalid_request');
    expect(typo.body.message).toContain('event');

    const free = await server.createAccount({ plan: 'free' });
    const freeApi = client(server.url, free.live_key);
    await register(freeApi, { url: receiver.url, events: ['intake.sent'] });
    await register(freeApi, { url: receiver.url, events: ['intake.sent'] });
    const third = await freeApi.post<Body>('/v1/webhooks', { url: receiver.url, events: ['intake.sent'] });
    expectError(third, 402, 'plan_required');
    expect(third.body.message).toContain('Free');
    expectError(await freeApi.post('/v1/webhooks/wh_nope/test', { event: 'intake.sent' }), 404, 'not_found');
  });

  it('requires an admin key on every route, and hides other accounts’ endpoints', async () => {
    const endpoint = await register(live, { url: receiver.url, events: ['intake.sent'] });
    const reader = await live.post<{ key: string }>('/v1/keys', {
      name: 'reader',
      scopes: ['intakes:read', 'intakes:write'],
    });
    const noAdmin = client(server.url, reader.body.key);
    const anonymous = client(server.url);
    await expectSecured(anonymous, noAdmin, 'GET', '/v1/webhooks');
    await expectSecured(anonymous, noAdmin, 'POST', '/v1/webhooks', {
      url: receiver.url,
      events: ['intake.sent'],
    });
    await expectSecured(anonymous, noAdmin, 'DELETE', `/v1/webhooks/${endpoint.id}`);
    await expectSecured(anonymous, noAdmin, 'POST', `/v1/webhooks/${endpoint.id}/test`, {
      event: 'intake.sent',
    });
    await expectSecured(anonymous, noAdmin, 'GET', `/v1/webhooks/${endpoint.id}/deliveries`);
    await expectSecured(anonymous, noAdmin, 'POST', `/v1/webhooks/${endpoint.id}/rotate_secret`);

    const other = client(server.url, (await server.createAccount()).live_key);
    for (const [method, path, body] of [
      ['DELETE', `/v1/webhooks/${endpoint.id}`, undefined],
      ['POST', `/v1/webhooks/${endpoint.id}/test`, { event: 'intake.sent' }],
      ['GET', `/v1/webhooks/${endpoint.id}/deliveries`, undefined],
      ['POST', `/v1/webhooks/${endpoint.id}/rotate_secret`, undefined],
    ] as const) {
      expectError(await other.call(method, path, { body }), 404, 'not_found');
    }
    await live.delete(`/v1/webhooks/${endpoint.id}`);
  });

  it('delivers every event name, with its payload, to a subscriber (test mode)', async () => {
    const endpoint = await register(test, { url: receiver.url, events: ALL_EVENTS });
    const secret = endpoint.secret ?? '';
    const from = receiver.requests.length;

    const created = await test.post<Body>('/v1/intakes', {
      project_name: 'Webhook tour',
      client: { email: 'wh@example.com' },
      items: ITEMS,
      // No reminders: this test records the reminder events itself, so it knows their number.
      chase_schedule: 'off',
    });
    expect(created.status, created.text).toBe(201);
    const id = created.body.intake_id as string;
    const simulate = (body: Body) => test.post(`/v1/test_helpers/intakes/${id}/simulate`, body);
    expect((await simulate({ action: 'view' })).status).toBe(200);
    expect((await simulate({ action: 'submit' })).status).toBe(200);
    expect(
      (await test.post(`/v1/intakes/${id}/revision`, { item_key: 'about', note: 'More detail, please.' }))
        .status,
    ).toBe(200);
    expect((await simulate({ action: 'submit', items: ['about'] })).status).toBe(200);
    expect((await test.post(`/v1/intakes/${id}/items/tagline/approve`)).status).toBe(200);
    // The rest is approved by the 72-hour auto-approval, on the test clock.
    expect((await test.post('/v1/test_helpers/advance_clock', { seconds: 73 * 3600 })).status).toBe(200);

    // Recorded directly, as any module records its events (emitEvent in its transaction): the fan-out
    // takes any type. intake.overdue has no flow yet; the next test drives the reminder events for real.
    const account = await server.server.services.db.kysely
      .selectFrom('intakes')
      .select(['account_id', 'project_name', 'client_email'])
      .where('id', '=', id)
      .executeTakeFirstOrThrow();
    const reminders: [string, Body][] = [
      [
        'chase.sent',
        {
          chase_id: 'ch_1',
          channel: 'email',
          attempt_no: 1,
          trigger: 'schedule',
          recipient: 'wh@example.com',
        },
      ],
      [
        'chase.bounced',
        { chase_id: 'ch_1', channel: 'email', client_email: 'wh@example.com', reason: 'hard_bounce' },
      ],
      [
        'intake.stalled',
        { project_name: account.project_name, client_email: 'wh@example.com', missing_items: [] },
      ],
      [
        'intake.overdue',
        { project_name: account.project_name, client_email: 'wh@example.com', missing_items: [] },
      ],
      ['chase.opted_out', { client_email: 'wh@example.com', channel: 'email' }],
    ];
    await server.server.services.db.kysely.transaction().execute(async (trx) => {
      for (const [type, data] of reminders) {
        await emitEvent(trx, {
          accountId: account.account_id,
          livemode: false,
          type,
          intakeId: id,
          data,
          occurredAt: new Date().toISOString(),
        });
      }
    });

    const expectedCount =
      1 + // intake.sent
      2 + // intake.viewed, client.viewed
      4 + // item.submitted: tagline, about, extras, then about again after the revision
      1 + // item.revision_requested
      2 + // intake.completed: when the required items were submitted, and again after the revision
      3 + // item.approved: tagline by hand, about and extras automatically
      1 + // intake.complete
      reminders.length;
    const requests = (await receiver.waitFor(from + expectedCount, 15_000)).slice(from);
    const byEvent = new Map<string, Body[]>();
    for (const request of requests) {
      expectSigned(request, secret);
      expect(request.headers['user-agent']).toMatch(/^IntakeService-Webhooks\//);
      expect(request.headers['content-type']).toBe('application/json');
      const payload = parse(request);
      expect(payload).toMatchObject({
        id: expect.stringMatching(/^evt_/),
        intake_id: id,
        occurred_at: expect.stringMatching(ISO),
        livemode: false,
      });
      expect(request.headers['x-service-event']).toBe(payload.event);
      byEvent.set(payload.event as string, [...(byEvent.get(payload.event as string) ?? []), payload]);
    }
    expect([...byEvent.keys()].sort()).toEqual([...ALL_EVENTS].sort());

    const one = (name: string) => byEvent.get(name)?.[0] ?? {};
    expect(one('intake.sent')).toMatchObject({
      project_name: 'Webhook tour',
      client_email: 'wh@example.com',
      sent_at: expect.stringMatching(ISO),
    });
    expect(one('intake.viewed')).toMatchObject({
      client_email: 'wh@example.com',
      viewed_at: expect.stringMatching(ISO),
    });
    expect(one('client.viewed')).toMatchObject({
      client_email: 'wh@example.com',
      viewed_at: expect.stringMatching(ISO),
      ip: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    expect(byEvent.get('item.submitted')).toHaveLength(4);
    expect(one('item.submitted')).toMatchObject({
      item_key: expect.any(String),
      item_type: expect.any(String),
      status: 'submitted',
      submitted_at: expect.stringMatching(ISO),
    });
    expect(one('item.revision_requested')).toMatchObject({
      item_key: 'about',
      item_type: 'longtext',
      status: 'needs_revision',
      note: 'More detail, please.',
    });
    expect(
      byEvent
        .get('item.approved')
        ?.map((p) => [p.item_key, p.auto_approved])
        .sort(),
    ).toEqual([
      ['about', true],
      ['extras', true],
      ['tagline', false],
    ]);
    expect(one('item.approved')).toMatchObject({
      status: 'approved',
      approved_at: expect.stringMatching(ISO),
    });
    expect(byEvent.get('intake.completed')).toHaveLength(2);
    for (const name of ['intake.completed', 'intake.complete']) {
      expect(one(name)).toMatchObject({
        project_name: 'Webhook tour',
        client_email: 'wh@example.com',
        completed_at: expect.stringMatching(ISO),
        items_count: 2,
      });
    }
    expect(one('chase.bounced')).toMatchObject({ chase_id: 'ch_1', reason: 'hard_bounce' });
    expect(one('intake.stalled')).toMatchObject({ missing_items: [] });

    const log = await eventually(async () => {
      const page = await test.get<{ deliveries: Attempt[] }>(
        `/v1/webhooks/${endpoint.id}/deliveries?limit=100`,
      );
      return page.body.deliveries.length === expectedCount ? page.body.deliveries : undefined;
    }, 'the delivery log');
    expect(
      log.every(
        (a) => a.outcome === 'succeeded' && a.delivery_status === 'succeeded' && a.response_status === 200,
      ),
    ).toBe(true);
    expect(log[0]).toMatchObject({
      attempt: 1,
      test: false,
      response_excerpt: 'thanks',
      error: null,
      next_attempt_at: null,
    });
    await test.delete(`/v1/webhooks/${endpoint.id}`);
  });

  it('delivers the reminder events of real flows: chase.sent, chase.bounced, intake.stalled, chase.opted_out', async () => {
    const events = ['chase.sent', 'chase.bounced', 'intake.stalled', 'chase.opted_out'];
    const endpoint = await register(test, { url: receiver.url, events });
    const from = receiver.requests.length;
    const intake = async (email: string) => {
      const created = await test.post<Body>('/v1/intakes', {
        project_name: `Chasing ${email}`,
        client: { email },
        items: [{ key: 'note', label: 'Note', type: 'text' }],
      });
      expect(created.status, created.text).toBe(201);
      return created.body.intake_id as string;
    };
    const bouncing = await intake('bouncer@example.com');
    const leaving = await intake('leaver@example.com');
    expect((await test.post(`/v1/intakes/${bouncing}/chase`, { channel: 'email' })).status).toBe(200);
    expect(
      (await test.post(`/v1/test_helpers/intakes/${bouncing}/simulate`, { action: 'bounce' })).status,
    ).toBe(200);
    // The scheduled reminders (2, 5 and 9 days): the first bounces, the next two meet a suppressed address.
    for (let day = 0; day < 10; day++) await test.post('/v1/test_helpers/advance_clock', { seconds: 86_400 });
    const outbox = await test.get<{ messages: { text: string }[] }>(
      `/v1/test_helpers/outbox?intake_id=${leaving}`,
    );
    const optOut = outbox.body.messages
      .map((m) => /https?:\/\/\S+\/optout\/\S+/.exec(m.text)?.[0])
      .find(Boolean);
    expect(optOut).toBeDefined();
    const left = await fetch(optOut ?? '', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'List-Unsubscribe=One-Click',
    });
    expect(left.status).toBeLessThan(300);

    await eventually(() => {
      const got = receiver.requests.slice(from).map((r) => parse(r).event);
      return Promise.resolve(events.every((name) => got.includes(name)) ? got : undefined);
    }, 'every reminder event');
    const received = receiver.requests.slice(from);
    for (const request of received) expectSigned(request, endpoint.secret ?? '');
    const payloads = received.map(parse);
    expect(payloads.find((p) => p.event === 'chase.sent' && p.intake_id === bouncing)).toMatchObject({
      chase_id: expect.stringMatching(/^ch_/),
      channel: 'email',
      attempt_no: 1,
      sent_at: expect.stringMatching(ISO),
      livemode: false,
    });
    expect(payloads.find((p) => p.event === 'chase.bounced')).toMatchObject({
      intake_id: bouncing,
      chase_id: expect.stringMatching(/^ch_/),
      channel: 'email',
      client_email: 'bouncer@example.com',
      bounced_at: expect.stringMatching(ISO),
      reason: 'hard_bounce',
    });
    expect(payloads.filter((p) => p.event === 'intake.stalled')).toEqual([
      expect.objectContaining({
        intake_id: bouncing,
        project_name: 'Chasing bouncer@example.com',
        client_email: 'bouncer@example.com',
        stalled_at: expect.stringMatching(ISO),
        missing_items: ['note'],
      }),
    ]);
    expect(payloads.find((p) => p.event === 'chase.opted_out')).toMatchObject({
      intake_id: leaving,
      client_email: 'leaver@example.com',
      opted_out_at: expect.stringMatching(ISO),
    });
    await test.delete(`/v1/webhooks/${endpoint.id}`);
  });

  it('delivers live events to live endpoints only, only subscribed events, and nothing from before registration', async () => {
    const before = await live.post<Body>('/v1/intakes', {
      project_name: 'Before',
      client: { email: 'b@example.com' },
      items: ITEMS,
    });
    expect(before.status).toBe(201);
    const liveEndpoint = await register(live, { url: receiver.url, events: ['intake.sent'] });
    const testEndpoint = await register(test, { url: receiver.url, events: ['item.submitted'] });
    const from = receiver.requests.length;
    await live.post(`/v1/intakes/${before.body.intake_id as string}/items/tagline/approve`);
    const after = await live.post<Body>('/v1/intakes', {
      project_name: 'After',
      client: { email: 'a@example.com' },
      items: ITEMS,
    });
    await test.post<Body>('/v1/intakes', {
      project_name: 'Test',
      client: { email: 't@example.com' },
      items: ITEMS,
    });
    const [request] = (await receiver.waitFor(from + 1)).slice(from);
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(receiver.requests.length).toBe(from + 1);
    expect(parse(request as Received)).toMatchObject({
      event: 'intake.sent',
      intake_id: after.body.intake_id,
      livemode: true,
      project_name: 'After',
    });
    expectSigned(request as Received, liveEndpoint.secret ?? '');
    await live.delete(`/v1/webhooks/${liveEndpoint.id}`);
    await test.delete(`/v1/webhooks/${testEndpoint.id}`);
  });

  it('sends a fictional, signed test event and logs it like any delivery', async () => {
    const endpoint = await register(live, { url: receiver.url, events: ['item.submitted'] });
    const from = receiver.requests.length;
    const sent = await live.post<Attempt>(`/v1/webhooks/${endpoint.id}/test`, { event: 'intake.stalled' });
    expect(sent.status, sent.text).toBe(200);
    expect(sent.body).toMatchObject({
      event: 'intake.stalled',
      test: true,
      attempt: 1,
      outcome: 'succeeded',
      response_status: 200,
      delivery_status: 'succeeded',
    });
    const [request] = (await receiver.waitFor(from + 1)).slice(from);
    expectSigned(request as Received, endpoint.secret ?? '');
    const payload = parse(request as Received);
    expect(payload).toMatchObject({
      id: sent.body.event_id,
      event: 'intake.stalled',
      intake_id: expect.stringMatching(/^in_[0-9A-Za-z]{22}$/),
      livemode: true,
      project_name: expect.any(String),
      client_email: expect.stringContaining('@'),
      stalled_at: expect.stringMatching(ISO),
      missing_items: expect.any(Array),
    });
    // Fictional: no such intake.
    expectError(await live.get(`/v1/intakes/${payload.intake_id as string}`), 404, 'not_found');
    const log = await live.get<{ deliveries: Attempt[] }>(`/v1/webhooks/${endpoint.id}/deliveries`);
    expect(log.body.deliveries[0]).toMatchObject({ id: sent.body.id, test: true });
    const bad = await live.post<Body>(`/v1/webhooks/${endpoint.id}/test`, { event: 'intake.exploded' });
    expectError(bad, 422, 'unprocessable');
    expect(bad.body.message).toContain('intake.exploded');
    await live.delete(`/v1/webhooks/${endpoint.id}`);
  });

  it('pages the delivery log with limit, starting_after and has_more', async () => {
    const endpoint = await register(live, { url: receiver.url, events: ['intake.sent'] });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      ids.unshift(
        (await live.post<Attempt>(`/v1/webhooks/${endpoint.id}/test`, { event: 'intake.sent' })).body.id,
      );
    }
    const first = await live.get<{ deliveries: Attempt[]; has_more: boolean }>(
      `/v1/webhooks/${endpoint.id}/deliveries?limit=2`,
    );
    expect(first.body.has_more).toBe(true);
    const seen = first.body.deliveries.map((d) => d.id);
    let cursor = seen.at(-1);
    for (;;) {
      const page = await live.get<{ deliveries: Attempt[]; has_more: boolean }>(
        `/v1/webhooks/${endpoint.id}/deliveries?limit=2&starting_after=${cursor ?? ''}`,
      );
      seen.push(...page.body.deliveries.map((d) => d.id));
      cursor = seen.at(-1);
      if (!page.body.has_more) break;
    }
    expect(seen).toEqual(ids);
    const one = ids[2] ?? '';
    const filtered = await live.get<{ deliveries: Attempt[] }>(`/v1/webhooks/${endpoint.id}/deliveries`);
    const deliveryId = filtered.body.deliveries.find((d) => d.id === one)?.delivery_id ?? '';
    const byDelivery = await live.get<{ deliveries: Attempt[] }>(
      `/v1/webhooks/${endpoint.id}/deliveries?delivery_id=${deliveryId}`,
    );
    expect(byDelivery.body.deliveries.map((d) => d.id)).toEqual([one]);
    expectError(
      await live.get(`/v1/webhooks/${endpoint.id}/deliveries?starting_after=wha_nope`),
      400,
      'invalid_request',
    );
    expectError(await live.get(`/v1/webhooks/${endpoint.id}/deliveries?limit=101`), 400, 'invalid_request');
    await live.delete(`/v1/webhooks/${endpoint.id}`);
  });

  it('rotates the secret: shown once, both sign for 24 hours of the test clock, then only the new one', async () => {
    const endpoint = await register(test, { url: receiver.url, events: ['intake.sent'] });
    const rotated = await test.post<Endpoint & { previous_secret_expires_at: string }>(
      `/v1/webhooks/${endpoint.id}/rotate_secret`,
    );
    expect(rotated.status, rotated.text).toBe(200);
    const fresh = rotated.body.secret ?? '';
    expect(fresh).toMatch(/^whsec_/);
    expect(fresh).not.toBe(endpoint.secret);
    expect(rotated.body.previous_secret_expires_at).toMatch(ISO);
    expect((await test.get('/v1/webhooks')).text).not.toContain(fresh);

    let from = receiver.requests.length;
    await test.post(`/v1/webhooks/${endpoint.id}/test`, { event: 'intake.sent' });
    let [request] = (await receiver.waitFor(from + 1)).slice(from);
    expect(String(request?.headers['service-signature']).match(/v1=/g)).toHaveLength(2);
    expectSigned(request as Received, fresh);
    expectSigned(request as Received, endpoint.secret ?? '');

    await test.post('/v1/test_helpers/advance_clock', { seconds: 24 * 3600 + 60 });
    from = receiver.requests.length;
    await test.post(`/v1/webhooks/${endpoint.id}/test`, { event: 'intake.sent' });
    [request] = (await receiver.waitFor(from + 1)).slice(from);
    expectSigned(request as Received, fresh);
    expect(
      verifySignature(
        request?.body ?? '',
        request?.headers['service-signature'] as string,
        endpoint.secret ?? '',
      ),
    ).toBe(false);

    const supplied = 'whsec_' + 'R'.repeat(40);
    const again = await test.post<Endpoint>(`/v1/webhooks/${endpoint.id}/rotate_secret`, {
      secret: supplied,
    });
    expect(again.body.secret).toBe(supplied);
    await test.delete(`/v1/webhooks/${endpoint.id}`);
  });

  it('formats slack and discord messages, still signed', async () => {
    for (const [format, field, rich] of [
      ['slack', 'text', 'blocks'],
      ['discord', 'content', 'embeds'],
    ] as const) {
      const endpoint = await register(live, { url: receiver.url, events: ['item.submitted'], format });
      expect(endpoint.format).toBe(format);
      const from = receiver.requests.length;
      await live.post(`/v1/webhooks/${endpoint.id}/test`, { event: 'item.submitted' });
      const [request] = (await receiver.waitFor(from + 1)).slice(from);
      const body = parse(request as Received);
      expect(Object.keys(body)).toContain(field);
      expect(Array.isArray(body[rich])).toBe(true);
      expect(body[field]).toMatch(/^Item "logo" submitted \(intake in_[0-9A-Za-z]{22}\)$/);
      expectSigned(request as Received, endpoint.secret ?? '');
      await live.delete(`/v1/webhooks/${endpoint.id}`);
    }
  });

  it('refuses at delivery an address that private addresses may no longer reach (pinned lookup)', async () => {
    const config = server.server.services.config;
    const byName = await register(live, {
      url: receiver.url.replace('127.0.0.1', 'localhost'),
      events: ['intake.sent'],
    });
    const byAddress = await register(live, { url: receiver.url, events: ['intake.sent'] });
    const from = receiver.requests.length;
    config.webhookAllowPrivate = false;
    try {
      for (const endpoint of [byName, byAddress]) {
        const sent = await live.post<Attempt>(`/v1/webhooks/${endpoint.id}/test`, { event: 'intake.sent' });
        expect(sent.body).toMatchObject({
          outcome: 'failed',
          response_status: null,
          delivery_status: 'failed',
        });
        expect(sent.body.error).toMatch(/loopback/);
      }
      expect(receiver.requests.length).toBe(from);
    } finally {
      config.webhookAllowPrivate = true;
    }
    await live.delete(`/v1/webhooks/${byName.id}`);
    await live.delete(`/v1/webhooks/${byAddress.id}`);
  });
});

describe.each(DATABASES)('webhooks: SSRF rules at registration on %s', (database) => {
  it('refuses loopback, private, link-local and mapped addresses without WEBHOOK_ALLOW_PRIVATE', async () => {
    const server = await startTestServer(database, { WEBHOOK_ALLOW_PRIVATE: 'off' });
    try {
      const api = client(server.url, (await server.createAccount()).live_key);
      for (const url of [
        'http://127.0.0.1:9/hook',
        'http://localhost:9/hook',
        'http://169.254.169.254/latest/meta-data/',
        'http://10.1.2.3/',
        'http://100.64.0.1/',
        'http://[::1]/',
        'http://[::ffff:127.0.0.1]/',
        'http://[fd00::1]/',
        'http://0.0.0.0/',
        'http://2130706433/',
      ]) {
        const refused = await api.post<Body>('/v1/webhooks', { url, events: ['intake.sent'] });
        expectError(refused, 422, 'unprocessable');
        expect(refused.body.message).toMatch(/^url: /);
      }
    } finally {
      await server.stop();
    }
  });

  it('requires https in production', async () => {
    const server = await startTestServer(database, { NODE_ENV: 'production', SECRET_KEY: 'p'.repeat(40) });
    try {
      const api = client(server.url, (await server.createAccount()).live_key);
      const refused = await api.post<Body>('/v1/webhooks', {
        url: 'http://127.0.0.1:9/',
        events: ['intake.sent'],
      });
      expectError(refused, 422, 'unprocessable');
      expect(refused.body.message).toContain('https');
      // Still refused over https: production does not allow private addresses by default.
      const privateHttps = await api.post<Body>('/v1/webhooks', {
        url: 'https://127.0.0.1:9/',
        events: ['intake.sent'],
      });
      expectError(privateHttps, 422, 'unprocessable');
      expect(privateHttps.body.message).toContain('loopback');
    } finally {
      await server.stop();
    }
  });
});
