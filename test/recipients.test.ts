import { createHmac } from 'node:crypto';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATABASES } from './helpers/env.js';
import { client, type Client } from './helpers/http.js';
import { startSmtpServer } from './helpers/mail.js';
import { expectError, expectSecured } from './helpers/security.js';
import { startTestServer, type TestServer } from './helpers/server.js';

type Body = Record<string, unknown>;
interface Recipient {
  email: string;
  name: string | null;
  role: 'client' | 'also_notify';
  opted_out_at: string | null;
  suppressed: boolean;
  stalled_at: string | null;
  added_at: string;
}
interface Chase {
  chase_id: string;
  status: string;
  sent_at: string | null;
  trigger: string;
  recipient: string | null;
  error?: string;
}
interface Status {
  status: string;
  chases: Chase[];
  recipients: Recipient[];
}
interface OutboxMessage {
  id: string;
  to: string;
  subject: string | null;
  text: string;
  html: string | null;
}

const BOUNCE_SECRET = 'bounce-secret-for-recipient-tests-0123';
const ITEMS = [
  { key: 'about', label: 'About your company', type: 'longtext' },
  { key: 'site', label: 'Website', type: 'url', required: false },
];
const unique = (name: string) => `${name}-${Math.random().toString(36).slice(2, 8)}@example.test`;

function sign(body: string): string {
  const t = Math.floor(Date.now() / 1000);
  return `t=${t},v1=${createHmac('sha256', BOUNCE_SECRET).update(`${t}.${body}`).digest('hex')}`;
}

describe.each(DATABASES)('recipients (also_notify) on %s', (database) => {
  let server: TestServer;
  let smtp: Awaited<ReturnType<typeof startSmtpServer>>;

  beforeAll(async () => {
    smtp = await startSmtpServer();
    server = await startTestServer(database, { SMTP_URL: smtp.url, BOUNCE_WEBHOOK_SECRET: BOUNCE_SECRET });
  });
  afterAll(async () => {
    await server.stop();
    await smtp.close();
  });

  async function account() {
    const created = await server.createAccount({ plan: 'agency' });
    return {
      live: client(server.url, created.live_key),
      test: client(server.url, created.test_key),
      created,
    };
  }

  async function create(api: Client, extra: Body = {}) {
    const clientEmail = unique('client');
    const answer = await api.post<Body>('/v1/intakes', {
      project_name: 'Brand kit',
      client: { email: clientEmail, name: 'Dana' },
      items: ITEMS,
      respect_quiet_hours: false,
      ...extra,
    });
    expect(answer.status, answer.text).toBe(201);
    return { id: answer.body.intake_id as string, clientEmail };
  }

  const status = async (api: Client, id: string) => (await api.get<Status>(`/v1/intakes/${id}/status`)).body;
  const outbox = async (api: Client, id: string) =>
    (await api.get<{ messages: OutboxMessage[] }>(`/v1/test_helpers/outbox?intake_id=${id}`)).body.messages;
  const advance = async (api: Client, days: number) => {
    const answer = await api.post('/v1/test_helpers/advance_clock', { seconds: Math.round(days * 86_400) });
    expect(answer.status, answer.text).toBe(200);
  };
  const events = async (id: string, type: string) =>
    (
      await server.server.services.db.kysely
        .selectFrom('events')
        .select('payload')
        .where('intake_id', '=', id)
        .where('type', '=', type)
        .execute()
    ).map((row) => JSON.parse(row.payload) as Body);
  const optOutLink = (message: OutboxMessage | undefined) =>
    /https?:\/\/\S+\/optout\/\S+/.exec(message?.text ?? '')?.[0] ?? '';

  it('invites and reminds each person in their own message, with their own opt-out link', async () => {
    const { test } = await account();
    const [ana, ben] = [unique('ana'), unique('ben')];
    const { id, clientEmail } = await create(test, {
      also_notify: [{ email: ana, name: 'Ana' }, { email: ben.toUpperCase() }],
    });

    const intake = await test.get<{ recipients: Recipient[] }>(`/v1/intakes/${id}`);
    expect(intake.body.recipients.map((r) => [r.email, r.role, r.name])).toEqual([
      [clientEmail, 'client', 'Dana'],
      [ana, 'also_notify', 'Ana'],
      [ben, 'also_notify', null],
    ]);

    const invitations = await outbox(test, id);
    expect(invitations.map((m) => m.to).sort()).toEqual([clientEmail, ana, ben].sort());
    for (const message of invitations) {
      // One address per message, and nobody's message mentions the others.
      for (const other of [clientEmail, ana, ben].filter((e) => e !== message.to)) {
        expect(message.text).not.toContain(other);
        expect(message.html ?? '').not.toContain(other);
      }
    }
    expect(invitations.find((m) => m.to === ana)?.text).toMatch(/^Hello Ana,/);

    await advance(test, 2.1);
    const reminders = (await outbox(test, id)).filter((m) => m.subject?.startsWith('Reminder'));
    expect(reminders.map((m) => m.to).sort()).toEqual([clientEmail, ana, ben].sort());
    const links = reminders.map((m) => optOutLink(m));
    expect(new Set(links).size).toBe(3);
    expect(optOutLink(reminders.find((m) => m.to === clientEmail))).toContain(`/optout/${id}?sig=`);
    expect(optOutLink(reminders.find((m) => m.to === ana))).toMatch(new RegExp(`/optout/${id}\\?r=rcp_`));

    const sent = (await status(test, id)).chases.filter((c) => c.status === 'sent');
    expect(sent.map((c) => c.recipient).sort()).toEqual([clientEmail, ana, ben].sort());
    const scheduled = (await status(test, id)).chases.filter((c) => c.status === 'scheduled');
    expect(scheduled).toHaveLength(3);
  });

  it('lets one person opt out alone; everyone stops once nothing is owed', async () => {
    const { test } = await account();
    const ana = unique('ana');
    const { id, clientEmail } = await create(test, { also_notify: [{ email: ana, name: 'Ana' }] });
    await advance(test, 2.1);
    const reminder = (await outbox(test, id)).find((m) => m.to === ana && m.subject?.startsWith('Reminder'));
    const link = new URL(optOutLink(reminder));
    const anonymous = client(server.url);
    const path = link.pathname + link.search;
    // A scanner following the link changes nothing: GET only shows the button.
    const page = await anonymous.get(path);
    expect(page.status).toBe(200);
    expect(page.text).toContain('<form method="post"');
    expect((await status(test, id)).recipients[1]?.opted_out_at).toBeNull();
    const tampered = path.replace(/sig=[0-9a-f]+/, 'sig=0000');
    expect((await anonymous.get(tampered)).status).toBe(404);

    const done = await anonymous.call('POST', path, {
      rawBody: 'List-Unsubscribe=One-Click',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(done.status).toBe(200);
    const after = await status(test, id);
    expect(after.recipients.find((r) => r.email === ana)?.opted_out_at).toEqual(expect.any(String));
    expect(after.recipients.find((r) => r.email === clientEmail)?.opted_out_at).toBeNull();
    const opted = await events(id, 'chase.opted_out');
    expect(opted).toHaveLength(1);
    expect(opted[0]).toMatchObject({ client_email: ana, channel: 'email' });

    await advance(test, 3);
    const second = (await outbox(test, id)).filter((m) => m.subject?.startsWith('Reminder'));
    expect(second.filter((m) => m.to === ana)).toHaveLength(1);
    expect(second.filter((m) => m.to === clientEmail)).toHaveLength(2);

    // The client delivers everything: nobody is reminded again.
    expect((await test.post(`/v1/test_helpers/intakes/${id}/simulate`, { action: 'submit' })).status).toBe(
      200,
    );
    expect((await status(test, id)).chases.filter((c) => c.status === 'scheduled')).toEqual([]);
    await advance(test, 10);
    const total = (await outbox(test, id)).filter((m) => m.subject?.startsWith('Reminder'));
    expect(total).toHaveLength(3);
  });

  it('adds and removes people after sending; refuses duplicates, the client and strangers', async () => {
    const { test, live } = await account();
    const { id, clientEmail } = await create(test);
    const carl = unique('carl');
    const added = await test.post<Recipient>(`/v1/intakes/${id}/recipients`, { email: carl, name: 'Carl' });
    expect(added.status, added.text).toBe(201);
    expect(added.body).toMatchObject({ email: carl, name: 'Carl', role: 'also_notify', suppressed: false });
    expect((await outbox(test, id)).filter((m) => m.to === carl)).toHaveLength(1);
    expect((await status(test, id)).chases.filter((c) => c.status === 'scheduled')).toHaveLength(2);

    expectError(await test.post(`/v1/intakes/${id}/recipients`, { email: carl }), 409, 'conflict');
    expectError(await test.post(`/v1/intakes/${id}/recipients`, { email: clientEmail }), 409, 'conflict');
    expectError(await test.post(`/v1/intakes/${id}/recipients`, { email: 'nope' }), 400, 'invalid_request');
    expectError(
      await test.post(`/v1/intakes/${id}/recipients`, { email: unique('x'), role: 'client' }),
      400,
      'invalid_request',
    );
    expectError(await test.delete(`/v1/intakes/${id}/recipients/${clientEmail}`), 409, 'conflict');
    expectError(await test.delete(`/v1/intakes/${id}/recipients/${unique('z')}`), 404, 'not_found');
    expectError(await live.post(`/v1/intakes/${id}/recipients`, { email: unique('y') }), 404, 'not_found');
    const other = await account();
    expectError(await other.test.delete(`/v1/intakes/${id}/recipients/${carl}`), 404, 'not_found');
    await expectSecured(client(server.url), undefined, 'POST', `/v1/intakes/${id}/recipients`, {
      email: unique('w'),
    });

    const removed = await test.delete(`/v1/intakes/${id}/recipients/${encodeURIComponent(carl)}`);
    expect(removed.status).toBe(204);
    const after = await status(test, id);
    expect(after.recipients.map((r) => r.email)).toEqual([clientEmail]);
    expect(after.chases.filter((c) => c.status === 'scheduled')).toHaveLength(1);
    await advance(test, 2.1);
    expect((await outbox(test, id)).filter((m) => m.to === carl)).toHaveLength(1);

    // An address as long as email allows (64-character local part, 254 in all) works in the path too.
    const long = `${'l'.repeat(64)}@${'d'.repeat(63)}.${'e'.repeat(63)}.${'x'.repeat(53)}.example`;
    expect(long).toHaveLength(254);
    const addedLong = await test.post<Recipient>(`/v1/intakes/${id}/recipients`, { email: long });
    expect(addedLong.status, addedLong.text).toBe(201);
    const reinstatedLong = await test.post(
      `/v1/intakes/${id}/recipients/${encodeURIComponent(long)}/reinstate`,
    );
    expect(reinstatedLong.status, reinstatedLong.text).toBe(200);
    expect((await test.delete(`/v1/intakes/${id}/recipients/${encodeURIComponent(long)}`)).status).toBe(204);

    // Creation checks the list: the client's address, repeats and more than ten are refused.
    const base = { project_name: 'x', client: { email: clientEmail }, items: ITEMS };
    expectError(
      await test.post('/v1/intakes', { ...base, also_notify: [{ email: clientEmail.toUpperCase() }] }),
      422,
      'unprocessable',
    );
    expectError(
      await test.post('/v1/intakes', { ...base, also_notify: [{ email: carl }, { email: carl }] }),
      422,
      'unprocessable',
    );
    const eleven = Array.from({ length: 11 }, (_, i) => ({ email: `p${i}-${carl}` }));
    expectError(await test.post('/v1/intakes', { ...base, also_notify: eleven }), 400, 'invalid_request');
    const ten = await create(test, { also_notify: eleven.slice(0, 10) });
    expectError(
      await test.post(`/v1/intakes/${ten.id}/recipients`, { email: unique('n') }),
      422,
      'unprocessable',
    );
  });

  it('live: one SMTP message per person, no Cc; a bounced address is suppressed until reinstated', async () => {
    const { live } = await account();
    const dora = unique('dora');
    const bouncing = unique('bounce-eve');
    const { id, clientEmail } = await create(live, {
      also_notify: [{ email: dora }, { email: bouncing }],
    });
    const [toClient] = await smtp.waitFor(clientEmail);
    const [toDora] = await smtp.waitFor(dora);
    for (const mail of [toClient, toDora]) {
      expect(mail?.envelopeTo).toHaveLength(1);
      expect(mail?.parsed.cc).toBeUndefined();
      expect(mail?.parsed.bcc).toBeUndefined();
    }
    expect(toClient?.envelopeTo).toEqual([clientEmail]);
    expect(toDora?.envelopeTo).toEqual([dora]);

    // The 550 at RCPT TO suppresses the address (the invitation's delivery runs after the answer).
    let eve: Recipient | undefined;
    for (let i = 0; i < 100 && !eve?.suppressed; i++) {
      eve = (await status(live, id)).recipients.find((r) => r.email === bouncing);
      if (!eve?.suppressed) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(eve?.suppressed).toBe(true);
    expect((await status(live, id)).recipients.find((r) => r.email === dora)?.suppressed).toBe(false);

    expectError(await live.post(`/v1/intakes/${id}/recipients/${unique('q')}/reinstate`), 404, 'not_found');
    const reinstated = await live.post<Recipient>(`/v1/intakes/${id}/recipients/${bouncing}/reinstate`);
    expect(reinstated.status, reinstated.text).toBe(200);
    expect(reinstated.body).toMatchObject({ email: bouncing, suppressed: false, stalled_at: null });
  });

  it("test mode: three suppressed reminders end that person's series only; reinstate resumes it", async () => {
    const { test } = await account();
    const fay = unique('fay');
    const { id, clientEmail } = await create(test, { also_notify: [{ email: fay }] });
    // The invitation is captured right after creation (a worker may be finishing it).
    let invitation: OutboxMessage | undefined;
    for (let i = 0; i < 100 && !invitation; i++) {
      invitation = (await outbox(test, id)).find((m) => m.to === fay);
      if (!invitation) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const report = JSON.stringify({ type: 'complaint', message_id: invitation?.id ?? '' });
    const reported = await client(server.url).call<Body>('POST', '/v1/inbound/email-events', {
      rawBody: report,
      headers: { 'content-type': 'application/json', 'x-service-signature': sign(report) },
    });
    expect(reported.body).toEqual({ received: true, action: 'suppressed' });

    await advance(test, 9.1); // reminders 1–3 of the default schedule: days 2, 5 and 9
    const after = await status(test, id);
    const fays = after.chases.filter((c) => c.recipient === fay && c.status !== 'scheduled');
    expect(fays.map((c) => c.status)).toEqual(['bounced', 'bounced', 'bounced']);
    const fayRecord = after.recipients.find((r) => r.email === fay);
    expect(fayRecord).toMatchObject({ suppressed: true, stalled_at: expect.any(String) });
    expect(after.recipients.find((r) => r.email === clientEmail)?.stalled_at).toBeNull();
    expect(await events(id, 'intake.stalled')).toEqual([]);
    const scheduled = after.chases.filter((c) => c.status === 'scheduled');
    expect(scheduled.map((c) => c.recipient)).toEqual([null]);
    // Nothing reached the inbox: the reported invitation is marked bounced, the reminders never went.
    expect((await outbox(test, id)).filter((m) => m.to === fay)).toEqual([]);

    const reinstated = await test.post<Recipient>(`/v1/intakes/${id}/recipients/${fay}/reinstate`);
    expect(reinstated.body).toMatchObject({ suppressed: false, stalled_at: null });
    expect((await status(test, id)).chases.filter((c) => c.status === 'scheduled')).toHaveLength(2);
    await advance(test, 7);
    expect(
      (await outbox(test, id)).filter((m) => m.to === fay && m.subject?.startsWith('Reminder')).length,
    ).toBeGreaterThanOrEqual(1);
  });

  it('agent tool manage_recipients adds, reinstates and removes (one REST call each)', async () => {
    const { test, created } = await account();
    const { id } = await create(test);
    const mcp = new McpClient({ name: 'recipients-tests', version: '1.0.0' });
    await mcp.connect(
      new StreamableHTTPClientTransport(new URL('/mcp', server.url), {
        requestInit: { headers: { authorization: `Bearer ${created.test_key}` } },
      }),
    );
    try {
      const call = async (args: Body): Promise<CallToolResult> =>
        CallToolResultSchema.parse(await mcp.callTool({ name: 'manage_recipients', arguments: args }));
      const text = (result: CallToolResult) =>
        result.content[0]?.type === 'text' ? result.content[0].text : '';
      const gil = unique('gil');

      const added = await call({ intake_id: id, action: 'add', email: gil, name: 'Gil' });
      expect(added.isError ?? false, text(added)).toBe(false);
      expect(added.structuredContent).toMatchObject({ email: gil, role: 'also_notify' });
      expect(text(added)).toContain('added');
      expect((await outbox(test, id)).filter((m) => m.to === gil)).toHaveLength(1);

      const again = await call({ intake_id: id, action: 'add', email: gil });
      expect(again.isError).toBe(true);
      expect(JSON.parse(text(again))).toMatchObject({ error: 'conflict', request_id: expect.any(String) });

      const reinstated = await call({ intake_id: id, action: 'reinstate', email: gil });
      expect(reinstated.structuredContent).toMatchObject({ email: gil, suppressed: false });

      const removed = await call({ intake_id: id, action: 'remove', email: gil });
      expect(removed.isError ?? false, text(removed)).toBe(false);
      expect(text(removed)).toContain('removed');
      expect((await status(test, id)).recipients.map((r) => r.email)).not.toContain(gil);

      const wrong = await call({ intake_id: id, action: 'promote', email: gil });
      expect(wrong.isError).toBe(true);
      expect(text(wrong)).toMatch(/action/);
    } finally {
      await mcp.close();
    }
  });
});
