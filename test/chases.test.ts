import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dispatchChase } from '../src/modules/chases/chases.service.js';
import { DATABASES } from './helpers/env.js';
import { client, type Client } from './helpers/http.js';
import { startSmsStub, startSmtpServer } from './helpers/mail.js';
import { expectError, expectSecured } from './helpers/security.js';
import { startTestServer, type TestServer } from './helpers/server.js';

type Body = Record<string, unknown>;
interface Chase {
  chase_id: string;
  channel: string;
  status: string;
  attempt_no: number;
  sent_at: string | null;
  scheduled_for: string;
  trigger: string;
}
interface Status {
  status: string;
  chases: Chase[];
}
interface OutboxMessage {
  id: string;
  channel: string;
  to: string;
  subject: string | null;
  text: string;
  html: string | null;
  intake_id: string;
  status: string;
  created_at: string;
}

const HOUR = 3600_000;
const DAY = 24 * HOUR;
const BOUNCE_SECRET = 'bounce-secret-for-tests-0123456789';
const ITEMS = [
  { key: 'about', label: 'About your company', type: 'longtext' },
  { key: 'site', label: 'Website', type: 'url', required: false },
];

/** A zone (Etc/GMT±N) in which `at` falls at 22:xx local, and its offset in hours. */
function zoneAt22(at: number): { zone: string; offset: number } {
  let offset = (22 - new Date(at).getUTCHours() + 48) % 24;
  if (offset > 12) offset -= 24;
  return { zone: offset === 0 ? 'Etc/GMT' : offset > 0 ? `Etc/GMT-${offset}` : `Etc/GMT+${-offset}`, offset };
}

/** A local wall-clock time (date of `at` in a fixed-offset zone, plus days) as UTC epoch ms. */
function localAt(at: number, offsetHours: number, addDays: number, hour: number, minute: number): number {
  const local = new Date(at + offsetHours * HOUR);
  return (
    Date.UTC(local.getUTCFullYear(), local.getUTCMonth(), local.getUTCDate() + addDays, hour, minute) -
    offsetHours * HOUR
  );
}

/** The List-Unsubscribe address of a received email (mailparser files it under "list"). */
function unsubscribeLink(mail: { parsed: { headers: Map<string, unknown> } } | undefined): string {
  const list = mail?.parsed.headers.get('list') as { unsubscribe?: { url?: string } } | undefined;
  return list?.unsubscribe?.url ?? '';
}

function sign(body: string, secret = BOUNCE_SECRET, t = Math.floor(Date.now() / 1000)): string {
  return `t=${t},v1=${createHmac('sha256', secret).update(`${t}.${body}`).digest('hex')}`;
}

describe.each(DATABASES)('reminders (chases) on %s', (database) => {
  let server: TestServer;
  let smtp: Awaited<ReturnType<typeof startSmtpServer>>;
  let sms: Awaited<ReturnType<typeof startSmsStub>>;

  beforeAll(async () => {
    smtp = await startSmtpServer();
    sms = await startSmsStub();
    server = await startTestServer(database, {
      SMTP_URL: smtp.url,
      SMS_URL: sms.url,
      BOUNCE_WEBHOOK_SECRET: BOUNCE_SECRET,
    });
  });
  afterAll(async () => {
    await server.stop();
    await smtp.close();
    await sms.close();
  });

  /** A fresh account (its own test clock), named so the From name can be checked. */
  async function account(plan: 'free' | 'solo' | 'agency' = 'agency') {
    const created = await server.createAccount({ plan });
    const live = client(server.url, created.live_key);
    const test = client(server.url, created.test_key);
    await live.patch('/v1/account', { name: 'Studio Nord' });
    return { id: created.account_id, live, test };
  }

  async function create(api: Client, extra: Body = {}) {
    const created = await api.post<Body>('/v1/intakes', {
      project_name: 'Website refresh',
      client: { email: `c-${Math.random().toString(36).slice(2)}@example.test`, name: 'Dana' },
      items: ITEMS,
      ...extra,
    });
    expect(created.status, created.text).toBe(201);
    const id = created.body.intake_id as string;
    const intake = await api.get<Body>(`/v1/intakes/${id}`);
    return {
      id,
      email: (intake.body.client as Body).email as string,
      sentAt: Date.parse((intake.body.sent_at as string | null) ?? (intake.body.created_at as string)),
    };
  }

  const chasesOf = async (api: Client, id: string) =>
    (await api.get<Status>(`/v1/intakes/${id}/status`)).body.chases;
  const advance = async (api: Client, ms: number) => {
    const answer = await api.post<Body>('/v1/test_helpers/advance_clock', { seconds: Math.round(ms / 1000) });
    expect(answer.status, answer.text).toBe(200);
    return Date.parse(answer.body.test_clock as string);
  };
  const sentDays = (chases: Chase[], sentAt: number) =>
    chases.filter((c) => c.sent_at !== null).map((c) => (Date.parse(c.sent_at ?? '') - sentAt) / DAY);
  const outbox = async (api: Client, id: string) =>
    (await api.get<{ messages: OutboxMessage[] }>(`/v1/test_helpers/outbox?intake_id=${id}`)).body.messages;
  const events = async (id: string, type: string) =>
    (
      await server.server.services.db.kysely
        .selectFrom('events')
        .select('payload')
        .where('intake_id', '=', id)
        .where('type', '=', type)
        .orderBy('occurred_at')
        .execute()
    ).map((e) => JSON.parse(e.payload) as Body);

  it('walks the default schedule day by day: T+2, 5, 9, then weekly', async () => {
    const { test } = await account();
    const { id, sentAt } = await create(test);
    const first = await chasesOf(test, id);
    expect(first).toEqual([
      expect.objectContaining({
        status: 'scheduled',
        attempt_no: 1,
        channel: 'email',
        trigger: 'schedule',
        sent_at: null,
        scheduled_for: new Date(sentAt + 2 * DAY).toISOString(),
      }),
    ]);
    const seen: number[] = [];
    for (let day = 1; day <= 17; day++) {
      await advance(test, DAY);
      const chases = await chasesOf(test, id);
      const sent = chases.filter((c) => c.status === 'sent').length;
      seen.push(sent);
    }
    expect(seen).toEqual([0, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 4, 4]);
    const chases = await chasesOf(test, id);
    expect(sentDays(chases, sentAt)).toEqual([2, 5, 9, 16]);
    expect(chases.map((c) => [c.attempt_no, c.status])).toEqual([
      [1, 'sent'],
      [2, 'sent'],
      [3, 'sent'],
      [4, 'sent'],
      [5, 'scheduled'],
    ]);
    expect(chases[4]?.scheduled_for).toBe(new Date(sentAt + 23 * DAY).toISOString());
    const mails = await outbox(test, id);
    expect(mails.map((m) => m.subject)).toEqual([
      ...Array<string>(4).fill('Reminder: Website refresh'),
      'Studio Nord needs a few things from you: Website refresh',
    ]);
    expect(mails.every((m) => m.status === 'captured' && m.channel === 'email')).toBe(true);
    expect(await events(id, 'chase.sent')).toHaveLength(4);
    expect((await events(id, 'chase.sent'))[0]).toMatchObject({
      chase_id: chases[0]?.chase_id,
      channel: 'email',
      attempt_no: 1,
      sent_at: chases[0]?.sent_at,
      livemode: false,
    });
  });

  it('walks gentle (3, 8, then every 14 days) and aggressive (1, 3, 5, then every 2 days)', async () => {
    const { test } = await account();
    const gentle = await create(test, { chase_schedule: 'gentle' });
    const aggressive = await create(test, { chase_schedule: 'aggressive' });
    await advance(test, 40 * DAY);
    const g = await chasesOf(test, gentle.id);
    expect(sentDays(g, gentle.sentAt)).toEqual([3, 8, 22, 36]);
    expect(g.at(-1)).toMatchObject({ status: 'scheduled', attempt_no: 5 });
    expect(Date.parse(g.at(-1)?.scheduled_for ?? '') - gentle.sentAt).toBe(50 * DAY);
    const a = await chasesOf(test, aggressive.id);
    // The series stops at the cap of 10 reminders.
    expect(sentDays(a, aggressive.sentAt)).toEqual([1, 3, 5, 7, 9, 11, 13, 15, 17, 19]);
    expect(a.every((c) => c.status === 'sent')).toBe(true);
  });

  it('custom intervals, max_reminders and off', async () => {
    const { test } = await account();
    const custom = await create(test, {
      chase_schedule: 'custom',
      chase_interval: 12,
      chase_interval_unit: 'hours',
      max_reminders: 3,
      respect_quiet_hours: false,
    });
    const off = await create(test, { chase_schedule: 'off' });
    expect(await chasesOf(test, off.id)).toEqual([]);
    await advance(test, 10 * DAY);
    expect(sentDays(await chasesOf(test, custom.id), custom.sentAt)).toEqual([0.5, 1, 1.5]);
    expect(await chasesOf(test, off.id)).toEqual([]);
    expectError(
      await test.post('/v1/intakes', {
        project_name: 'x',
        client: { email: 'x@example.test' },
        items: ITEMS,
        chase_schedule: 'custom',
      }),
      422,
      'unprocessable',
    );
    expectError(
      await test.post('/v1/intakes', {
        project_name: 'x',
        client: { email: 'x@example.test' },
        items: ITEMS,
        chase_interval: 3,
      }),
      422,
      'unprocessable',
    );
    const free = await account('free');
    expectError(
      await free.test.post('/v1/intakes', {
        project_name: 'x',
        client: { email: 'x@example.test' },
        items: ITEMS,
        chase_schedule: 'custom',
        chase_interval: 2,
      }),
      402,
      'plan_required',
    );
  });

  it("respects quiet hours and chase_at_time in the client's time zone", async () => {
    const { test } = await account();
    const { zone, offset } = zoneAt22(Date.now());
    const quiet = await create(test, { client: { email: 'q@example.test', timezone: zone } });
    const loud = await create(test, {
      client: { email: 'l@example.test', timezone: zone },
      respect_quiet_hours: false,
    });
    const atTime = await create(test, {
      client: { email: 't@example.test', timezone: 'Etc/GMT-3' },
      chase_at_time: '10:30',
    });
    await advance(test, 4 * DAY);
    const [q] = await chasesOf(test, quiet.id);
    // Due at 22:xx local on day 2: sent at 09:00 local the next morning.
    expect(q?.sent_at).toBe(new Date(localAt(quiet.sentAt + 2 * DAY, offset, 1, 9, 0)).toISOString());
    const [l] = await chasesOf(test, loud.id);
    expect(l?.sent_at).toBe(new Date(loud.sentAt + 2 * DAY).toISOString());
    const [t] = await chasesOf(test, atTime.id);
    expect(t?.sent_at).toBe(new Date(localAt(atTime.sentAt + 2 * DAY, 3, 0, 10, 30)).toISOString());
  });

  it('stops when nothing is outstanding, resumes after a revision, thanks at completion, stops on archive and delete', async () => {
    const { test } = await account();
    const { id, sentAt } = await create(test);
    await test.post(`/v1/test_helpers/intakes/${id}/simulate`, { action: 'submit', items: ['about'] });
    expect(await chasesOf(test, id)).toEqual([
      expect.objectContaining({ status: 'cancelled', attempt_no: 1, sent_at: null }),
    ]);
    let now = await advance(test, 20 * DAY);
    expect((await chasesOf(test, id)).filter((c) => c.status === 'sent')).toEqual([]);

    const revision = await test.post<Body>(`/v1/intakes/${id}/revision`, {
      item_key: 'about',
      note: 'Longer, please.',
    });
    expect(revision.body.client_notified).toBe(true);
    const resumed = (await chasesOf(test, id)).at(-1);
    expect(resumed).toMatchObject({ status: 'scheduled', attempt_no: 2 });
    // Resumed with the series' spacing from now (reminder 2 follows reminder 1 by 3 days).
    expect(Date.parse(resumed?.scheduled_for ?? '') - now).toBeGreaterThanOrEqual(3 * DAY - 5000);
    now = await advance(test, 3 * DAY + HOUR);
    expect((await chasesOf(test, id)).filter((c) => c.status === 'sent')).toHaveLength(1);
    const revisionMail = (await outbox(test, id)).find((m) => m.subject?.startsWith('Please revise'));
    expect(revisionMail?.text).toContain('Longer, please.');

    await test.post(`/v1/test_helpers/intakes/${id}/simulate`, { action: 'submit', items: ['about'] });
    expect((await test.post(`/v1/intakes/${id}/items/about/approve`)).status).toBe(200);
    expect((await test.get<Body>(`/v1/intakes/${id}`)).body.status).toBe('completed');
    await advance(test, 1000); // the thank-you is queued with the approval; this runs what is due
    expect((await outbox(test, id)).filter((m) => m.subject?.startsWith('Thank you'))).toHaveLength(1);
    expect((await chasesOf(test, id)).some((c) => c.status === 'scheduled')).toBe(false);

    // New items reopen the intake: the client hears about them and reminders start again.
    const added = await test.post(`/v1/intakes/${id}/items`, {
      items: [{ key: 'logo_notes', label: 'Notes on your logo', type: 'text' }],
    });
    expect(added.status).toBe(201);
    await advance(test, 1000);
    expect(
      (await outbox(test, id)).some((m) => m.subject === 'New items requested for Website refresh'),
    ).toBe(true);
    expect((await chasesOf(test, id)).at(-1)?.status).toBe('scheduled');

    await test.post(`/v1/intakes/${id}/archive`);
    expect((await chasesOf(test, id)).at(-1)).toMatchObject({ status: 'cancelled' });
    const before = (await outbox(test, id)).length;
    await advance(test, 30 * DAY);
    expect((await outbox(test, id)).length).toBe(before);
    expect(sentDays(await chasesOf(test, id), sentAt).length).toBe(1);

    expect((await test.delete(`/v1/intakes/${id}`)).status).toBe(204);
    const db = server.server.services.db.kysely;
    expect(await db.selectFrom('chases').select('id').where('intake_id', '=', id).execute()).toEqual([]);
    expect(await db.selectFrom('messages').select('id').where('intake_id', '=', id).execute()).toEqual([]);
  });

  it('bounce → stop → stalled in test mode, then escalation by SMS', async () => {
    const { test } = await account();
    const { id, email, sentAt } = await create(test, {
      client: { email: 'b@example.test', phone: '+14155550123' },
    });
    const simulated = await test.post<Status>(`/v1/test_helpers/intakes/${id}/simulate`, {
      action: 'bounce',
    });
    expect(simulated.status, simulated.text).toBe(200);
    await advance(test, 2 * DAY + HOUR);
    let chases = await chasesOf(test, id);
    expect(chases[0]).toMatchObject({ status: 'bounced', attempt_no: 1 });
    const [bounced] = await events(id, 'chase.bounced');
    expect(bounced).toMatchObject({
      event: 'chase.bounced',
      intake_id: id,
      chase_id: chases[0]?.chase_id,
      channel: 'email',
      client_email: email,
      reason: 'hard_bounce',
      bounced_at: chases[0]?.sent_at,
    });
    expect((await outbox(test, id)).filter((m) => m.subject?.startsWith('Reminder'))).toEqual([]);
    expectError(await test.post(`/v1/intakes/${id}/chase`, { channel: 'email' }), 409, 'conflict');

    await advance(test, 3 * DAY);
    expect(await events(id, 'intake.stalled')).toEqual([]);
    await advance(test, 4 * DAY);
    chases = await chasesOf(test, id);
    expect(chases.map((c) => c.status)).toEqual(['bounced', 'bounced', 'bounced']);
    expect(sentDays(chases, sentAt)).toEqual([2]);
    const stalled = await events(id, 'intake.stalled');
    expect(stalled).toHaveLength(1);
    expect(stalled[0]).toMatchObject({
      project_name: 'Website refresh',
      client_email: email,
      missing_items: ['about'],
      stalled_at: chases[2]?.scheduled_for,
    });
    expect(await events(id, 'chase.bounced')).toHaveLength(1);
    await advance(test, 30 * DAY);
    expect((await chasesOf(test, id)).length).toBe(3);

    const escalated = await test.post<Chase>(`/v1/intakes/${id}/chase`, { channel: 'sms' });
    expect(escalated.status, escalated.text).toBe(200);
    expect(escalated.body).toMatchObject({
      channel: 'sms',
      status: 'sent',
      attempt_no: 4,
      trigger: 'manual',
    });
    const [dropped] = (await outbox(test, id)).filter((m) => m.channel === 'sms');
    expect(dropped).toMatchObject({ status: 'dropped', to: '+14155550123', subject: null, html: null });
    expect(dropped?.text).toContain(`/portal/${id}`);
    expect(sms.requests.filter((r) => r.form.To === '+14155550123')).toEqual([]);
  });

  it('manual chases in test mode: email to the inbox, SMS checks, security', async () => {
    const { test, live } = await account();
    const { id } = await create(test, { due_date: '2099-03-01' });
    const chased = await test.post<Chase>(`/v1/intakes/${id}/chase`);
    expect(chased.status, chased.text).toBe(200);
    expect(chased.body).toMatchObject({ channel: 'email', status: 'sent', attempt_no: 1, trigger: 'manual' });
    expect(chased.body.chase_id).toMatch(/^ch_/);
    const [reminder] = await outbox(test, id);
    expect(reminder).toMatchObject({
      channel: 'email',
      status: 'captured',
      subject: 'Reminder: Website refresh',
    });
    expect(reminder?.text).toContain('About your company');
    expect(reminder?.text).toContain('March 1, 2099');
    expect(reminder?.html).toContain(`/portal/${id}`);
    expect(reminder?.html).toContain('/optout/');
    const status = await chasesOf(test, id);
    expect(status.map((c) => [c.attempt_no, c.status, c.trigger])).toEqual([
      [1, 'sent', 'manual'],
      [2, 'scheduled', 'schedule'],
    ]);
    expectError(await test.post(`/v1/intakes/${id}/chase`, { channel: 'sms' }), 422, 'unprocessable');
    expectError(await test.post(`/v1/intakes/${id}/chase`, { channel: 'fax' }), 400, 'invalid_request');
    expectError(await test.post('/v1/intakes/in_nope/chase'), 404, 'not_found');
    expectError(await live.post(`/v1/intakes/${id}/chase`), 404, 'not_found');
    const draft = await create(test, { send: false });
    expectError(await test.post(`/v1/intakes/${draft.id}/chase`), 409, 'conflict');
    expect(await outbox(test, draft.id)).toEqual([]);
    const reader = await live.post<{ key: string }>('/v1/keys', { name: 'r', scopes: ['intakes:read'] });
    await expectSecured(
      client(server.url),
      client(server.url, reader.body.key),
      'POST',
      `/v1/intakes/${id}/chase`,
      {},
    );
    expectError(await live.get('/v1/test_helpers/outbox'), 403, 'forbidden');
  });

  it('writes the client in their language', async () => {
    const { test } = await account();
    const { id } = await create(test, {
      client: { email: 'fr@example.test', name: 'Léa', language: 'fr-CA' },
    });
    const [invitation] = await outbox(test, id);
    expect(invitation?.subject).toBe('Studio Nord a besoin de quelques éléments : Website refresh');
    expect(invitation?.text).toContain('Bonjour Léa,');
    expect(invitation?.html).toContain('lang="fr"');
  });

  it('live: the portal link and a manual chase go out over SMTP', async () => {
    const { live } = await account();
    const { id, email } = await create(live, { due_date: '2099-01-31' });
    const [invitation] = await smtp.waitFor(email);
    expect(invitation?.parsed.subject).toBe('Studio Nord needs a few things from you: Website refresh');
    expect(invitation?.parsed.from?.value[0]).toMatchObject({
      name: 'Studio Nord',
      address: 'reminders@example.test',
    });
    expect(invitation?.parsed.text).toContain(`${server.server.services.config.appUrl}/portal/${id}`);
    expect(invitation?.parsed.html).toContain(`/portal/${id}`);
    expect(invitation?.parsed.text).toContain('January 31, 2099');
    expect(invitation?.parsed.messageId).toMatch(/^<msg_[0-9A-Za-z]+@example\.test>$/);

    const chased = await live.post<Chase>(`/v1/intakes/${id}/chase`, { channel: 'email' });
    expect(chased.body).toMatchObject({ status: 'sent', channel: 'email', attempt_no: 1 });
    const mails = await smtp.waitFor(email, 2);
    const reminder = mails.find((m) => m.parsed.subject === 'Reminder: Website refresh');
    expect(unsubscribeLink(reminder)).toContain(`/optout/${id}?sig=`);
    expect(reminder?.raw).toContain('List-Unsubscribe-Post: List-Unsubscribe=One-Click');
    expect(reminder?.parsed.text).toMatch(/\nStill needed:\n(- [^\n]+\n)+\n/);
    const row = await server.server.services.db.kysely
      .selectFrom('chases')
      .selectAll()
      .where('id', '=', chased.body.chase_id)
      .executeTakeFirstOrThrow();
    expect(row.provider_message_id).toBe(reminder?.parsed.messageId);
  });

  it('live: SMS through the provider API, its errors, plan and quota', async () => {
    const { live, id: accountId } = await account('solo');
    const { id } = await create(live, { client: { email: 's@example.test', phone: '+14155550199' } });
    const chased = await live.post<Chase>(`/v1/intakes/${id}/chase`, { channel: 'sms' });
    expect(chased.status, chased.text).toBe(200);
    expect(chased.body).toMatchObject({ channel: 'sms', status: 'sent' });
    const sent = sms.requests.filter((r) => r.form.To === '+14155550199');
    expect(sent).toHaveLength(1);
    expect(sent[0]?.path).toBe('/2010-04-01/Accounts/AC0123456789/Messages.json');
    expect(sent[0]?.authorization).toBe(`Basic ${Buffer.from('AC0123456789:authtoken').toString('base64')}`);
    expect(sent[0]?.form.From).toBe('+15550001111');
    expect(sent[0]?.form.Body).toContain(`/portal/${id}`);
    expect(((await live.get<Body>('/v1/usage')).body.sms_messages as Body).used).toBe(1);

    const refused = await create(live, { client: { email: 'r@example.test', phone: '+15005550009' } });
    const failed = await live.post<Chase>(`/v1/intakes/${refused.id}/chase`, { channel: 'sms' });
    expect(failed.body).toMatchObject({ status: 'failed' });

    await server.server.services.db.kysely
      .updateTable('usage_counters')
      .set({ value: 100 })
      .where('account_id', '=', accountId)
      .where('metric', '=', 'sms_messages')
      .execute();
    expectError(await live.post(`/v1/intakes/${id}/chase`, { channel: 'sms' }), 402, 'quota_exceeded');
    const free = await account('free');
    const freeIntake = await create(free.live, {
      client: { email: 'f@example.test', phone: '+14155550100' },
    });
    expectError(
      await free.live.post(`/v1/intakes/${freeIntake.id}/chase`, { channel: 'sms' }),
      402,
      'plan_required',
    );
  });

  it('live: a 550 is a hard bounce: chase bounced, address suppressed, chase.bounced fired', async () => {
    const { live } = await account();
    const { id, email } = await create(live, { client: { email: 'later@example.test' } });
    await smtp.waitFor(email);
    smtp.rejecting.add(email);
    const chased = await live.post<Chase>(`/v1/intakes/${id}/chase`);
    expect(chased.body).toMatchObject({ status: 'bounced' });
    expect(await events(id, 'chase.bounced')).toEqual([
      expect.objectContaining({ chase_id: chased.body.chase_id, reason: 'hard_bounce', client_email: email }),
    ]);
    expectError(await live.post(`/v1/intakes/${id}/chase`), 409, 'conflict');
    smtp.rejecting.delete(email);

    // The portal-link email itself bouncing suppresses the address too.
    const other = await create(live, { client: { email: 'bounce-now@example.test' } });
    const db = server.server.services.db.kysely;
    for (let i = 0; i < 100; i++) {
      const row = await db
        .selectFrom('messages')
        .select('status')
        .where('intake_id', '=', other.id)
        .executeTakeFirst();
      if (row?.status === 'bounced') break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expectError(await live.post(`/v1/intakes/${other.id}/chase`), 409, 'conflict');
  });

  it('live: a due reminder is sent exactly once, however many senders race for it', async () => {
    const { live } = await account();
    const { id, email } = await create(live);
    await smtp.waitFor(email);
    const [scheduled] = await chasesOf(live, id);
    const chaseId = scheduled?.chase_id ?? '';
    const services = server.server.services;
    // The clock reaches the reminder: make its job due now.
    await services.db.kysely
      .updateTable('jobs')
      .set({ due_at: Date.now() - 1000 })
      .where('subject_id', '=', `${id}/chase/${chaseId}`)
      .execute();
    await Promise.all([
      dispatchChase(services, chaseId),
      dispatchChase(services, chaseId),
      server.server.worker.runDue({ livemode: true }),
    ]);
    await dispatchChase(services, chaseId);
    const reminders = (await smtp.waitFor(email, 2)).filter((m) => m.parsed.subject?.startsWith('Reminder'));
    expect(reminders).toHaveLength(1);
    const chases = await chasesOf(live, id);
    expect(chases[0]).toMatchObject({ chase_id: chaseId, status: 'sent', attempt_no: 1 });
    expect(chases[1]).toMatchObject({ status: 'scheduled', attempt_no: 2 });
    expect(await events(id, 'chase.sent')).toHaveLength(1);
  });

  it('live: a reminder whose sender died mid-send is recorded failed, never sent again; its series goes on', async () => {
    const { live } = await account();
    const { id, email } = await create(live);
    await smtp.waitFor(email);
    const [scheduled] = await chasesOf(live, id);
    const chaseId = scheduled?.chase_id ?? '';
    const db = server.server.services.db.kysely;
    // A worker claimed the due reminder's job and died before recording anything: its lease ran out.
    await db
      .updateTable('jobs')
      .set({ attempts: 1, due_at: Date.now() - 2000, locked_until: Date.now() - 1000 })
      .where('subject_id', '=', `${id}/chase/${chaseId}`)
      .execute();
    await server.server.worker.runDue({ livemode: true });
    const chases = await chasesOf(live, id);
    expect(chases[0]).toMatchObject({ chase_id: chaseId, status: 'failed', attempt_no: 1 });
    expect(chases[1]).toMatchObject({ status: 'scheduled', attempt_no: 2 });
    const row = await db.selectFrom('chases').select('error').where('id', '=', chaseId).executeTakeFirst();
    expect(row?.error).toMatch(/never send twice/);
    const reminders = smtp.received.filter(
      (m) => m.envelopeTo.includes(email) && m.parsed.subject?.startsWith('Reminder'),
    );
    expect(reminders).toHaveLength(0);
    expect(await events(id, 'chase.sent')).toHaveLength(0);
  });

  it('live: a sender waits for a change that holds the intake, and sends nothing when that change settled the reminder', async () => {
    const { live } = await account();
    const { id, email } = await create(live);
    await smtp.waitFor(email);
    const [scheduled] = await chasesOf(live, id);
    const chaseId = scheduled?.chase_id ?? '';
    const services = server.server.services;
    let dispatched: Promise<void> | undefined;
    // A change to the intake (here: a reminder recorded failed by another worker's give-up) holds the
    // intake's lock while the sender starts; the sender must see what it committed.
    await services.db.kysely.transaction().execute(async (trx) => {
      await trx
        .updateTable('intakes')
        .set((eb) => ({ updated_at: eb.ref('updated_at') }))
        .where('id', '=', id)
        .execute();
      dispatched = dispatchChase(services, chaseId);
      await new Promise((resolve) => setTimeout(resolve, 400));
      await trx
        .updateTable('chases')
        .set({ status: 'failed', attempt_no: 1, error: 'settled elsewhere' })
        .where('id', '=', chaseId)
        .execute();
    });
    await dispatched;
    const row = await services.db.kysely
      .selectFrom('chases')
      .select(['status', 'error'])
      .where('id', '=', chaseId)
      .executeTakeFirst();
    expect(row).toEqual({ status: 'failed', error: 'settled elsewhere' });
    const reminders = smtp.received.filter(
      (m) => m.envelopeTo.includes(email) && m.parsed.subject?.startsWith('Reminder'),
    );
    expect(reminders).toHaveLength(0);
    expect(await events(id, 'chase.sent')).toHaveLength(0);
  });

  it('an archive while a reminder is on its way leaves it to its sender, which then records it cancelled', async () => {
    const { test } = await account();
    const { id } = await create(test);
    const [scheduled] = await chasesOf(test, id);
    const chaseId = scheduled?.chase_id ?? '';
    const db = server.server.services.db.kysely;
    const job = () =>
      db
        .selectFrom('jobs')
        .select(['id', 'locked_until'])
        .where('subject_id', '=', `${id}/chase/${chaseId}`)
        .executeTakeFirst();
    // A sender holds the reminder's job right now (its lease runs).
    await db
      .updateTable('jobs')
      .set({ attempts: 0, locked_until: Date.now() + 60_000 })
      .where('subject_id', '=', `${id}/chase/${chaseId}`)
      .execute();
    expect((await test.post(`/v1/intakes/${id}/archive`)).status).toBe(200);
    // Not called off under the sender: still scheduled, its job still there.
    const row = await db.selectFrom('chases').select('status').where('id', '=', chaseId).executeTakeFirst();
    expect(row?.status).toBe('scheduled');
    expect(await job()).toBeDefined();
    // The sender goes on (here: the job is run), finds the intake archived and records the chase cancelled.
    await db
      .updateTable('jobs')
      .set({ locked_until: null, due_at: Date.now() - 1000 })
      .where('subject_id', '=', `${id}/chase/${chaseId}`)
      .execute();
    await dispatchChase(server.server.services, chaseId);
    const after = await db
      .selectFrom('chases')
      .select(['status', 'error'])
      .where('id', '=', chaseId)
      .executeTakeFirst();
    expect(after).toEqual({ status: 'cancelled', error: 'archived' });
    expect(await job()).toBeUndefined();
    expect((await outbox(test, id)).filter((m) => m.subject?.startsWith('Reminder'))).toHaveLength(0);
  });

  it('live: provider bounce reports arrive signed; the opt-out link stops reminders', async () => {
    const { live } = await account();
    const { id, email } = await create(live);
    const chased = await live.post<Chase>(`/v1/intakes/${id}/chase`);
    const reminder = (await smtp.waitFor(email, 2)).find((m) => m.parsed.subject?.startsWith('Reminder'));
    const messageId = reminder?.parsed.messageId ?? '';
    const body = JSON.stringify({
      type: 'bounce',
      bounce_type: 'hard',
      message_id: messageId,
      reason: '550 5.1.1',
    });
    const anonymous = client(server.url);
    const post = (raw: string, signature: string) =>
      anonymous.call<Body>('POST', '/v1/inbound/email-events', {
        rawBody: raw,
        headers: { 'content-type': 'application/json', 'x-service-signature': signature },
      });
    expectError(await post(body, sign(body, 'wrong-secret-0123456789')), 400, 'invalid_request');
    expectError(
      await post(body, sign(body, BOUNCE_SECRET, Math.floor(Date.now() / 1000) - 600)),
      400,
      'invalid_request',
    );
    const accepted = await post(body, sign(body));
    expect(accepted.body).toEqual({ received: true, action: 'suppressed' });
    expect((await chasesOf(live, id))[0]).toMatchObject({
      chase_id: chased.body.chase_id,
      status: 'bounced',
    });
    expect(await events(id, 'chase.bounced')).toHaveLength(1);
    const unknown = JSON.stringify({ type: 'complaint', message_id: 'msg_unknown' });
    expect((await post(unknown, sign(unknown))).body).toEqual({ received: true, action: 'ignored' });

    const second = await create(live);
    await smtp.waitFor(second.email);
    await live.post(`/v1/intakes/${second.id}/chase`);
    const mail = (await smtp.waitFor(second.email, 2)).find((m) => m.parsed.subject?.startsWith('Reminder'));
    const link = unsubscribeLink(mail);
    expect(link).toContain(`/optout/${second.id}?sig=`);
    const path = new URL(link).pathname + new URL(link).search;
    const page = await anonymous.get(path);
    expect(page.status).toBe(200);
    expect(page.text).toContain('<form method="post"');
    expect((await chasesOf(live, second.id)).at(-1)?.status).toBe('scheduled');
    const done = await anonymous.call('POST', path, {
      rawBody: 'List-Unsubscribe=One-Click',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(done.status).toBe(200);
    expect((await chasesOf(live, second.id)).at(-1)?.status).toBe('cancelled');
    expect(await events(second.id, 'chase.opted_out')).toHaveLength(1);
    expectError(await live.post(`/v1/intakes/${second.id}/chase`), 409, 'conflict');
    expect((await anonymous.get(`/optout/${second.id}?sig=0000`)).status).toBe(404);
  });
});
