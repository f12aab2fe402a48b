import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATABASES } from './helpers/env.js';
import { client, type Client } from './helpers/http.js';
import { startTestServer, type TestServer } from './helpers/server.js';

type Body = Record<string, unknown>;
interface Chase {
  status: string;
  sent_at: string | null;
  scheduled_for: string;
  recipient: string | null;
}
interface Status {
  chases: Chase[];
  recipients: { email: string }[];
}

const HOUR = 3600_000;
const DAY = 24 * HOUR;
const ITEMS = [
  { key: 'about', label: 'About your company', type: 'longtext' },
  { key: 'logo', label: 'Logo', type: 'text' },
  { key: 'site', label: 'Website', type: 'url', required: false },
];
const unique = (name: string) => `${name}-${Math.random().toString(36).slice(2, 8)}@example.test`;
const isoDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);

describe.each(DATABASES)('reminder controls and intake.overdue on %s', (database) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(database);
  });
  afterAll(async () => {
    await server.stop();
  });

  async function account() {
    const created = await server.createAccount({ plan: 'agency' });
    const test = client(server.url, created.test_key);
    const clock = await test.post<Body>('/v1/test_helpers/advance_clock', { seconds: 1 });
    return { test, key: created.test_key, now: Date.parse(clock.body.test_clock as string) };
  }
  async function create(api: Client, extra: Body = {}) {
    const answer = await api.post<Body>('/v1/intakes', {
      project_name: 'Annual report',
      client: { email: unique('client') },
      items: ITEMS,
      ...extra,
    });
    expect(answer.status, answer.text).toBe(201);
    const id = answer.body.intake_id as string;
    const intake = await api.get<Body>(`/v1/intakes/${id}`);
    return { id, sentAt: Date.parse((intake.body.sent_at as string | null) ?? '') };
  }
  const advance = async (api: Client, ms: number) => {
    const answer = await api.post('/v1/test_helpers/advance_clock', { seconds: Math.round(ms / 1000) });
    expect(answer.status, answer.text).toBe(200);
  };
  const status = async (api: Client, id: string) => (await api.get<Status>(`/v1/intakes/${id}/status`)).body;
  const events = async (id: string, type: string) =>
    (
      await server.server.services.db.kysely
        .selectFrom('events')
        .select('payload')
        .where('intake_id', '=', id)
        .where('type', '=', type)
        .execute()
    ).map((row) => JSON.parse(row.payload) as Body);

  it('fires intake.overdue once when the due date passes with required items missing', async () => {
    const { test, now } = await account();
    const due = isoDay(now + DAY);
    const late = await create(test, { due_date: due });
    const done = await create(test, { due_date: due });
    const draft = await create(test, { due_date: due, send: false });
    expect(
      (await test.post(`/v1/test_helpers/intakes/${done.id}/simulate`, { action: 'submit' })).status,
    ).toBe(200);
    // Not yet: the client may deliver until the end of the due day.
    await advance(test, Date.parse(`${due}T00:00:00Z`) - now);
    expect(await events(late.id, 'intake.overdue')).toEqual([]);

    await advance(test, DAY + HOUR);
    const fired = await events(late.id, 'intake.overdue');
    expect(fired).toHaveLength(1);
    expect(fired[0]).toMatchObject({
      event: 'intake.overdue',
      project_name: 'Annual report',
      due_date: due,
      missing_items: ['about', 'logo'],
      overdue_at: expect.any(String),
    });
    expect(Date.parse(fired[0]?.overdue_at as string)).toBeGreaterThanOrEqual(
      Date.parse(`${due}T00:00:00Z`) + DAY,
    );
    expect(await events(done.id, 'intake.overdue')).toEqual([]);
    expect(await events(draft.id, 'intake.overdue')).toEqual([]);

    await advance(test, 5 * DAY);
    expect(await events(late.id, 'intake.overdue')).toHaveLength(1);

    // A draft sent after its due date is overdue at once.
    expect((await test.post(`/v1/intakes/${draft.id}/send`)).status).toBe(200);
    await advance(test, 1000);
    expect((await events(draft.id, 'intake.overdue')).map((e) => e.due_date)).toEqual([due]);
  });

  it('moves the overdue check with the due date (PATCH), and waits for the end of the day in the client zone', async () => {
    const { test, now } = await account();
    const first = isoDay(now + DAY);
    const { id } = await create(test, { due_date: first });
    const later = isoDay(now + 4 * DAY);
    const patched = await test.patch<Body>(`/v1/intakes/${id}`, { due_date: later });
    expect(patched.status, patched.text).toBe(200);
    await advance(test, 3 * DAY);
    expect(await events(id, 'intake.overdue')).toEqual([]);
    await advance(test, 3 * DAY);
    expect((await events(id, 'intake.overdue')).map((e) => e.due_date)).toEqual([later]);

    // Honolulu is UTC−10: a due day there ends at 10:00 UTC the next day.
    const clock = Date.parse(
      (await test.post<Body>('/v1/test_helpers/advance_clock', { seconds: 1 })).body.test_clock as string,
    );
    const zoned = await create(test, {
      due_date: isoDay(clock + DAY),
      client: { email: unique('zoned'), timezone: 'Pacific/Honolulu' },
    });
    const endUtc = Date.parse(`${isoDay(clock + 2 * DAY)}T00:00:00Z`);
    await advance(test, endUtc + 9 * HOUR - clock);
    expect(await events(zoned.id, 'intake.overdue')).toEqual([]);
    await advance(test, 2 * HOUR);
    expect(await events(zoned.id, 'intake.overdue')).toHaveLength(1);
  });

  it('re-plans pending reminders from now under new settings (PATCH), and never reminds who delivered', async () => {
    const { test } = await account();
    const { id } = await create(test, { respect_quiet_hours: false });
    const before = (await status(test, id)).chases.filter((c) => c.status === 'scheduled');
    expect(before).toHaveLength(1);

    const patched = await test.patch<Body>(`/v1/intakes/${id}`, {
      chase_schedule: 'custom',
      chase_interval: 6,
      chase_interval_unit: 'hours',
      max_reminders: 2,
    });
    expect(patched.status, patched.text).toBe(200);
    const after = (await status(test, id)).chases.filter((c) => c.status === 'scheduled');
    expect(after).toHaveLength(1);
    expect(Date.parse(after[0]?.scheduled_for ?? '')).toBeLessThan(
      Date.parse(before[0]?.scheduled_for ?? ''),
    );

    await advance(test, 2 * DAY);
    const sent = (await status(test, id)).chases.filter((c) => c.status === 'sent');
    expect(sent).toHaveLength(2); // the cap
    expect((await status(test, id)).chases.filter((c) => c.status === 'scheduled')).toEqual([]);

    const off = await test.patch<Body>(`/v1/intakes/${id}`, { chase_schedule: 'off' });
    expect(off.status, off.text).toBe(200);
    await advance(test, 30 * DAY);
    expect((await status(test, id)).chases.filter((c) => c.status === 'sent')).toHaveLength(2);

    const delivered = await create(test, { respect_quiet_hours: false });
    await test.post(`/v1/test_helpers/intakes/${delivered.id}/simulate`, { action: 'submit' });
    await advance(test, 20 * DAY);
    expect((await status(test, delivered.id)).chases.filter((c) => c.status === 'sent')).toEqual([]);
  });

  it('agent tools: define_intake takes every reminder control; the series follows them per person', async () => {
    const { test, key } = await account();
    const mcp = new McpClient({ name: 'reminder-tests', version: '1.0.0' });
    await mcp.connect(
      new StreamableHTTPClientTransport(new URL('/mcp', server.url), {
        requestInit: { headers: { authorization: `Bearer ${key}` } },
      }),
    );
    const call = async (name: string, args: Body): Promise<CallToolResult> =>
      CallToolResultSchema.parse(await mcp.callTool({ name, arguments: args }));
    try {
      const helper = unique('helper');
      const defined = await call('define_intake', {
        project_name: 'Tax documents',
        client: { email: unique('agent-client'), timezone: 'Europe/Berlin' },
        items: ITEMS,
        chase_schedule: 'custom',
        chase_interval: 12,
        chase_interval_unit: 'hours',
        max_reminders: 3,
        respect_quiet_hours: false,
        also_notify: [{ email: helper, name: 'Helper' }],
        idempotency_key: crypto.randomUUID(),
      });
      expect(defined.isError ?? false).toBe(false);
      const id = (defined.structuredContent as Body).intake_id as string;
      const clock = await call('advance_test_clock', { seconds: 2 * 86_400 });
      expect(clock.isError ?? false).toBe(false);
      const result = await call('get_intake_status', { intake_id: id });
      const view = result.structuredContent as unknown as Status;
      const sent = view.chases.filter((c) => c.status === 'sent');
      expect(sent.filter((c) => c.recipient === helper)).toHaveLength(3);
      expect(sent).toHaveLength(6);
      const { sentAt } = {
        sentAt: Date.parse((await test.get<Body>(`/v1/intakes/${id}`)).body.sent_at as string),
      };
      const helperHours = sent
        .filter((c) => c.recipient === helper)
        .map((c) => (Date.parse(c.sent_at ?? '') - sentAt) / HOUR);
      expect(helperHours).toEqual([12, 24, 36]);
      expect(view.recipients.map((r) => r.email)).toContain(helper);

      // chase_at_time: 10:30 Berlin time, and quiet hours respected.
      const timed = await call('define_intake', {
        project_name: 'Timed',
        client: { email: unique('timed'), timezone: 'Europe/Berlin' },
        items: ITEMS,
        chase_at_time: '10:30',
      });
      const timedId = (timed.structuredContent as Body).intake_id as string;
      const timedStatus = (await status(test, timedId)).chases.filter((c) => c.status === 'scheduled');
      const local = new Intl.DateTimeFormat('en-GB', {
        timeZone: 'Europe/Berlin',
        hour: '2-digit',
        minute: '2-digit',
      }).format(new Date(timedStatus[0]?.scheduled_for ?? ''));
      expect(local).toBe('10:30');

      const refused = await call('define_intake', {
        project_name: 'Bad',
        client: { email: unique('bad') },
        items: ITEMS,
        chase_schedule: 'default',
        chase_interval: 3,
      });
      expect(refused.isError).toBe(true);
    } finally {
      await mcp.close();
    }
  });
});
