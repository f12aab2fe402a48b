import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decideOwnerItem } from '../src/modules/intakes/decisions.service.js';
import type { World } from '../src/kernel/world.js';
import { DATABASES } from './helpers/env.js';
import { client, type Client } from './helpers/http.js';
import { expectError, expectSecured } from './helpers/security.js';
import { startTestServer, type TestServer } from './helpers/server.js';

type Body = Record<string, unknown>;
interface Item {
  key: string;
  type: string;
  label: string;
  status: string;
  constraints: Body;
  assignee: string;
  proposed: { value: unknown; rationale: string } | null;
  decided_by: string | null;
}
interface Intake {
  id: string;
  project_name: string;
  due_date: string | null;
  chase_schedule: string;
  client: Body;
  client_brief: string | null;
  folder_id: string | null;
  sent_at: string;
  status: string;
  items: Item[];
}
interface Status {
  status: string;
  progress: { submitted: number; total: number; outstanding: number };
  items: { key: string }[];
  chases: { status: string; scheduled_for: string; trigger: string }[];
}
interface Results {
  items: { key: string; value: unknown; status: string; decided_by?: string | null }[];
}

const DAY_MS = 86_400_000;

describe.each(DATABASES)('editing after sending, decisions and follow-up on %s', (database) => {
  let server: TestServer;
  let live: Client;
  let test: Client;
  let reader: Client;
  let other: Client;
  let portal: Client;
  let anonymous: Client;
  let accountId: string;

  beforeAll(async () => {
    server = await startTestServer(database);
    const account = await server.createAccount({ plan: 'agency' });
    accountId = account.account_id;
    live = client(server.url, account.live_key);
    test = client(server.url, account.test_key);
    other = client(server.url, (await server.createAccount({ plan: 'agency' })).live_key);
    portal = client(server.url);
    anonymous = client(server.url);
    const readerKey = await live.post<{ key: string }>('/v1/keys', {
      name: 'reader',
      scopes: ['intakes:read'],
    });
    reader = client(server.url, readerKey.body.key);
  });
  afterAll(async () => {
    await server.stop();
  });

  async function create(api: Client, extra: Body = {}): Promise<string> {
    const created = await api.post<Body>('/v1/intakes', {
      project_name: 'Website',
      client: { email: 'dana@example.com', name: 'Dana' },
      items: [
        { key: 'about', label: 'About you', type: 'longtext', constraints: { max_chars: 200 } },
        {
          key: 'tier',
          label: 'Package',
          type: 'select',
          options: [
            { value: 'a', label: 'A' },
            { value: 'b', label: 'B' },
          ],
        },
        { key: 'notes', label: 'Notes', type: 'text', required: false },
      ],
      ...extra,
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return created.body.intake_id as string;
  }

  it('secures the new routes and hides other accounts’ intakes (404)', async () => {
    const id = await create(live);
    await expectSecured(anonymous, reader, 'PATCH', `/v1/intakes/${id}`, { project_name: 'x' });
    await expectSecured(anonymous, reader, 'PATCH', `/v1/intakes/${id}/items/about`, { label: 'x' });
    await expectSecured(anonymous, reader, 'DELETE', `/v1/intakes/${id}/items/notes`);
    expectError(await other.patch(`/v1/intakes/${id}`, { project_name: 'x' }), 404, 'not_found');
    expectError(await other.patch(`/v1/intakes/${id}/items/about`, { label: 'x' }), 404, 'not_found');
    expectError(await other.delete(`/v1/intakes/${id}/items/notes`), 404, 'not_found');
    expectError(await live.patch(`/v1/intakes/${id}`, { project_nam: 'typo' }), 400, 'invalid_request');
  });

  it('PATCH /v1/intakes/:id changes the settings; null clears; a past due date is 422', async () => {
    const id = await create(live, { due_date: '2099-01-01', client_brief: 'Hello' });
    const patched = await live.patch<Intake>(`/v1/intakes/${id}`, {
      project_name: 'Website 2',
      due_date: '2099-02-01',
      client: { name: 'Dana Smith', phone: '+4930123456', language: 'de', timezone: 'Europe/Berlin' },
      client_brief: 'Line one\nLine two',
    });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect(patched.body).toMatchObject({
      project_name: 'Website 2',
      due_date: '2099-02-01',
      client: {
        email: 'dana@example.com',
        name: 'Dana Smith',
        phone: '+4930123456',
        language: 'de',
        timezone: 'Europe/Berlin',
      },
      client_brief: 'Line one\nLine two',
    });
    const cleared = await live.patch<Intake>(`/v1/intakes/${id}`, {
      due_date: null,
      client_brief: null,
      client: { phone: null },
    });
    expect(cleared.body).toMatchObject({
      due_date: null,
      client_brief: null,
      client: { phone: null, name: 'Dana Smith' },
    });
    expectError(await live.patch(`/v1/intakes/${id}`, { due_date: '2001-01-01' }), 422, 'unprocessable');
    expectError(
      await live.patch(`/v1/intakes/${id}`, { client_brief: 'x'.repeat(5001) }),
      400,
      'invalid_request',
    );
    const view = await portal.get<{ brief: string | null; language: string }>(`/portal/api/${id}`);
    expect(view.body.language).toBe('de');
  });

  it('new chase settings re-plan the pending reminder from now', async () => {
    const id = await create(test);
    const before = await test.get<Status>(`/v1/intakes/${id}/status`);
    const sentAt = Date.parse((await test.get<Intake>(`/v1/intakes/${id}`)).body.sent_at);
    const first = before.body.chases.find((c) => c.status === 'scheduled');
    expect(Date.parse(first?.scheduled_for ?? '') - sentAt).toBe(2 * DAY_MS);

    const aggressive = await test.patch<Intake>(`/v1/intakes/${id}`, {
      chase_schedule: 'aggressive',
      max_reminders: 3,
    });
    expect(aggressive.body.chase_schedule).toBe('aggressive');
    const after = await test.get<Status>(`/v1/intakes/${id}/status`);
    const scheduled = after.body.chases.filter((c) => c.status === 'scheduled');
    expect(scheduled).toHaveLength(1);
    expect(Date.parse(scheduled[0]?.scheduled_for ?? '') - sentAt).toBe(DAY_MS);

    expectError(await test.patch(`/v1/intakes/${id}`, { chase_schedule: 'custom' }), 422, 'unprocessable');
    await test.patch(`/v1/intakes/${id}`, {
      chase_schedule: 'custom',
      chase_interval: 6,
      chase_interval_unit: 'hours',
    });
    const custom = await test.get<Status>(`/v1/intakes/${id}/status`);
    const next = custom.body.chases.find((c) => c.status === 'scheduled');
    expect(Date.parse(next?.scheduled_for ?? '') - sentAt).toBe(6 * 3_600_000);
    // Changing the due date alone keeps the custom interval (stored settings are merged, not reset).
    await test.patch(`/v1/intakes/${id}`, { due_date: '2099-03-01' });
    const kept = await test.get<Status>(`/v1/intakes/${id}/status`);
    expect(kept.body.chases.find((c) => c.status === 'scheduled')?.scheduled_for).toBe(next?.scheduled_for);

    await test.patch(`/v1/intakes/${id}`, { chase_schedule: 'off' });
    const off = await test.get<Status>(`/v1/intakes/${id}/status`);
    expect(off.body.chases.filter((c) => c.status === 'scheduled')).toEqual([]);
  });

  it('PATCH of an item keeps a still-valid answer and refuses to discard one silently (409)', async () => {
    const id = await create(live);
    await portal.call('PUT', `/portal/api/${id}/items/about`, { body: { value: 'We make furniture.' } });
    await portal.post(`/portal/api/${id}/items/about/submit`);
    await portal.call('PUT', `/portal/api/${id}/items/tier`, { body: { value: 'b' } });

    const relabel = await live.patch<Item>(`/v1/intakes/${id}/items/about`, {
      label: 'About your company',
      help: 'Two lines',
    });
    expect(relabel.status, JSON.stringify(relabel.body)).toBe(200);
    expect(relabel.body).toMatchObject({ key: 'about', label: 'About your company', status: 'submitted' });

    const tighter = await live.patch<Body>(`/v1/intakes/${id}/items/about`, {
      constraints: { max_chars: 5 },
    });
    expectError(tighter, 409, 'item_answer_would_be_discarded');
    expect(tighter.body.message).toContain('max_chars');
    const option = await live.patch<Body>(`/v1/intakes/${id}/items/tier`, {
      options: [{ value: 'a', label: 'A' }],
    });
    expectError(option, 409, 'item_answer_would_be_discarded');

    const discarded = await live.patch<Item>(`/v1/intakes/${id}/items/about`, {
      constraints: { max_chars: 5 },
      discard_submitted_value: true,
    });
    expect(discarded.status).toBe(200);
    expect(discarded.body).toMatchObject({ status: 'pending', constraints: { max_chars: 5 } });
    const view = await portal.get<{ items: { key: string; value: unknown; status: string }[] }>(
      `/portal/api/${id}`,
    );
    expect(view.body.items.find((i) => i.key === 'about')).toMatchObject({ value: null, status: 'pending' });

    const retyped = await live.patch<Item>(`/v1/intakes/${id}/items/notes`, {
      type: 'number',
      constraints: { min: 0 },
    });
    expect(retyped.body.type).toBe('number');
    expectError(
      await live.patch(`/v1/intakes/${id}/items/notes`, { type: 'sparkles' }),
      422,
      'unprocessable',
    );
    expectError(await live.patch(`/v1/intakes/${id}/items/nope`, { label: 'x' }), 404, 'not_found');
  });

  it('DELETE of an item: 204 without a submission, 409 with one, 409 for the last item', async () => {
    const id = await create(live);
    await portal.call('PUT', `/portal/api/${id}/items/about`, { body: { value: 'Draft' } });
    await portal.post(`/portal/api/${id}/items/about/submit`);
    expectError(await live.delete(`/v1/intakes/${id}/items/about`), 409, 'conflict');
    await portal.call('PUT', `/portal/api/${id}/items/notes`, { body: { value: 'a draft only' } });
    expect((await live.delete(`/v1/intakes/${id}/items/notes`)).status).toBe(204);
    expect((await live.delete(`/v1/intakes/${id}/items/tier`)).status).toBe(204);
    const intake = await live.get<Intake>(`/v1/intakes/${id}`);
    expect(intake.body.items.map((i) => i.key)).toEqual(['about']);
    expectError(await live.delete(`/v1/intakes/${id}/items/about`), 409, 'conflict');
  });

  it('deleting the only outstanding required item completes the intake once the rest is approved', async () => {
    const id = await create(live);
    await portal.call('PUT', `/portal/api/${id}/items/about`, { body: { value: 'Text' } });
    await portal.post(`/portal/api/${id}/items/about/submit`);
    await live.post(`/v1/intakes/${id}/items/about/approve`);
    expect((await live.delete(`/v1/intakes/${id}/items/tier`)).status).toBe(204);
    expect((await live.get<Status>(`/v1/intakes/${id}/status`)).body.status).toBe('completed');
  });

  describe('decisions', () => {
    const decisionItems = [
      { key: 'about', label: 'About you', type: 'longtext' },
      {
        key: 'launch_plan',
        label: 'Launch in one go or in phases?',
        type: 'select',
        assignee: 'owner',
        options: [
          { value: 'one', label: 'One go' },
          { value: 'phases', label: 'Phases' },
        ],
        proposed: { value: 'phases', rationale: 'The client has 40 pages; phases lower the risk.' },
      },
      { key: 'budget_ok', label: 'Budget approved?', type: 'boolean', assignee: 'owner' },
    ];

    function userWorld(livemode: boolean, actor: World['actor'] = { type: 'user', id: 'usr_test' }): World {
      return { accountId, livemode, clock: server.server.services.clock, offsetMs: 0, actor };
    }

    it('a proposal must fit its item, and only owner items take one', async () => {
      const bad = await live.post<Body>('/v1/intakes', {
        project_name: 'x',
        client: { email: 'a@example.com' },
        items: [{ ...decisionItems[1], proposed: { value: 'later', rationale: 'r' } }],
      });
      expectError(bad, 422, 'unprocessable');
      expect(bad.body.message).toContain('proposed.value');
      const notOwner = await live.post<Body>('/v1/intakes', {
        project_name: 'x',
        client: { email: 'a@example.com' },
        items: [{ key: 'a', label: 'A', type: 'text', proposed: { value: 'x', rationale: 'r' } }],
      });
      expectError(notOwner, 422, 'unprocessable');
    });

    it('never reach the portal, progress or reminders, and never block completion', async () => {
      const id = await create(live, { items: decisionItems });
      const view = await portal.get<{ items: { key: string }[]; progress: { total: number } }>(
        `/portal/api/${id}`,
      );
      expect(view.body.items.map((i) => i.key)).toEqual(['about']);
      expect(view.body.progress.total).toBe(1);
      expectError(
        await portal.call('PUT', `/portal/api/${id}/items/budget_ok`, { body: { value: true } }),
        404,
        'not_found',
      );
      const page = await portal.get(`/portal/${id}`);
      expect(page.text).not.toContain('Budget approved?');

      const intake = await live.get<Intake>(`/v1/intakes/${id}`);
      expect(intake.body.items.find((i) => i.key === 'launch_plan')).toMatchObject({
        assignee: 'owner',
        proposed: { value: 'phases' },
        decided_by: null,
        status: 'pending',
      });
      const invitation = await server.server.services.db.kysely
        .selectFrom('messages')
        .select(['text_body'])
        .where('intake_id', '=', id)
        .executeTakeFirstOrThrow();
      expect(invitation.text_body).toContain('About you');
      expect(invitation.text_body).not.toContain('Budget approved?');

      // Open decisions: in the status object as owner items, in results (include_pending) with the proposal.
      const before = await live.get<Status>(`/v1/intakes/${id}/status`);
      expect(before.body.items.find((i) => i.key === 'launch_plan')).toMatchObject({ assignee: 'owner' });
      expect(before.body.items.find((i) => i.key === 'about')).toMatchObject({ assignee: 'client' });
      const pending = await live.get<Results>(`/v1/intakes/${id}/results?include_pending=true`);
      expect(pending.body.items.find((i) => i.key === 'launch_plan')).toMatchObject({
        status: 'pending',
        value: null,
        proposed: { value: 'phases' },
      });
      expect(pending.body.items.find((i) => i.key === 'budget_ok')).toMatchObject({ proposed: null });

      await portal.call('PUT', `/portal/api/${id}/items/about`, { body: { value: 'Hi' } });
      await portal.post(`/portal/api/${id}/items/about/submit`);
      await live.post(`/v1/intakes/${id}/items/about/approve`);
      const status = await live.get<Status>(`/v1/intakes/${id}/status`);
      expect(status.body.status).toBe('completed');
      expect(status.body.progress).toMatchObject({ submitted: 1, total: 1, outstanding: 0 });

      // Completion adopts the proposal; the decision without one waits for a person.
      const results = await live.get<Results>(`/v1/intakes/${id}/results`);
      expect(results.body.items.find((i) => i.key === 'launch_plan')).toMatchObject({
        value: 'phases',
        status: 'approved',
        decided_by: 'agent_proposal',
      });
      expect(results.body.items.find((i) => i.key === 'budget_ok')).toBeUndefined();
      expect(results.body.items.find((i) => i.key === 'about')).not.toHaveProperty('decided_by');

      // A person answers in the dashboard (decideOwnerItem); only_new returns just that answer.
      const decided = await decideOwnerItem(server.server.services, userWorld(true), id, 'budget_ok', true);
      expect(decided).toMatchObject({ status: 'approved', decided_by: 'owner' });
      const overridden = await decideOwnerItem(
        server.server.services,
        userWorld(true),
        id,
        'launch_plan',
        'one',
      );
      expect(overridden.decided_by).toBe('owner');
      const fresh = await live.get<Results>(`/v1/intakes/${id}/results?only_new=true`);
      expect(fresh.body.items.map((i) => [i.key, i.value, i.decided_by])).toEqual([
        ['launch_plan', 'one', 'owner'],
        ['budget_ok', true, 'owner'],
      ]);
    });

    it('an API key cannot decide; a wrong value, a client item or another account’s intake is refused', async () => {
      const id = await create(live, { items: decisionItems });
      const services = server.server.services;
      await expect(
        decideOwnerItem(services, userWorld(true, { type: 'api_key', id: 'key_x' }), id, 'budget_ok', true),
      ).rejects.toMatchObject({ code: 'forbidden' });
      await expect(decideOwnerItem(services, userWorld(true), id, 'budget_ok', 'yes')).rejects.toMatchObject({
        code: 'unprocessable',
      });
      await expect(decideOwnerItem(services, userWorld(true), id, 'about', 'x')).rejects.toMatchObject({
        code: 'unprocessable',
      });
      await expect(decideOwnerItem(services, userWorld(false), id, 'budget_ok', true)).rejects.toMatchObject({
        code: 'not_found',
      });
      await expect(
        decideOwnerItem(services, { ...userWorld(true), accountId: 'acct_other' }, id, 'budget_ok', true),
      ).rejects.toMatchObject({ code: 'not_found' });
    });

    it('adding only decisions sends the client nothing; adding a client item does', async () => {
      const id = await create(live);
      const templates = async () =>
        (
          await server.server.services.db.kysely
            .selectFrom('messages')
            .select(['template'])
            .where('intake_id', '=', id)
            .execute()
        ).map((m) => m.template);
      const before = await templates();
      const added = await live.post(`/v1/intakes/${id}/items`, { items: [decisionItems[2]] });
      expect(added.status).toBe(201);
      expect(await templates()).toEqual(before);
      await live.post(`/v1/intakes/${id}/items`, { items: [{ key: 'logo', label: 'Logo', type: 'image' }] });
      expect((await templates()).filter((t) => t === 'items_added')).toHaveLength(1);
    });

    it('the test-mode client never answers decisions', async () => {
      const id = await create(test, { items: decisionItems });
      const status = await test.post<Status>(`/v1/test_helpers/intakes/${id}/simulate`, { action: 'submit' });
      expect(status.body.progress).toMatchObject({ submitted: 1, total: 1 });
      const intake = await test.get<Intake>(`/v1/intakes/${id}`);
      expect(intake.body.items.find((i) => i.key === 'budget_ok')?.status).toBe('pending');
    });
  });

  describe('follow_up', () => {
    it('recommends polling without a webhook (tighter near the due date), the webhook once one exists', async () => {
      const fresh = client(server.url, (await server.createAccount({ plan: 'free' })).test_key);
      const far = await fresh.post<{ follow_up: Body }>('/v1/intakes', {
        project_name: 'x',
        client: { email: 'a@example.com' },
        items: [{ key: 'a', label: 'A', type: 'text' }],
      });
      expect(far.body.follow_up).toMatchObject({
        recommended: 'schedule',
        webhook: {
          active_endpoints: 0,
          events: ['chase.bounced', 'intake.completed', 'intake.stalled', 'item.submitted'],
          register_with: 'manage_webhook',
        },
        schedule: { check_with: 'get_intake_status', every_hours: 24 },
      });
      const today = new Date().toISOString().slice(0, 10);
      const near = await fresh.post<{ follow_up: { schedule: { every_hours: number; until: string } } }>(
        '/v1/intakes',
        {
          project_name: 'x',
          client: { email: 'a@example.com' },
          items: [{ key: 'a', label: 'A', type: 'text' }],
          due_date: today,
        },
      );
      expect(near.body.follow_up.schedule.every_hours).toBe(1);
      expect(near.body.follow_up.schedule.until.slice(0, 10) > today).toBe(true);

      const hook = await fresh.post<Body>('/v1/webhooks', {
        url: 'http://127.0.0.1:9/hook',
        events: ['intake.completed', 'item.submitted'],
      });
      expect(hook.status, JSON.stringify(hook.body)).toBe(201);
      const withHook = await fresh.post<{ follow_up: Body }>('/v1/intakes', {
        project_name: 'x',
        client: { email: 'a@example.com' },
        items: [{ key: 'a', label: 'A', type: 'text' }],
      });
      expect(withHook.body.follow_up).toMatchObject({
        recommended: 'webhook',
        webhook: {
          active_endpoints: 1,
          events: ['intake.completed', 'item.submitted'],
          register_with: 'manage_webhook',
        },
      });
    });
  });
});
