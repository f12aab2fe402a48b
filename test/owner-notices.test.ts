import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATABASES } from './helpers/env.js';
import { client, type Client } from './helpers/http.js';
import { startSmtpServer } from './helpers/mail.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { hiddenField, signedInOwner } from './helpers/signed-in.js';

/**
 * Owner notifications end to end: a client sends answers through the portal, and the account's people
 * get one email per sending (a real SMTP server in live mode, the test outbox in test mode), a daily
 * digest, or nothing, as each chose on the dashboard's settings page.
 */
const ITEMS = [
  { key: 'about', label: 'About your company', type: 'longtext' },
  { key: 'site', label: 'Current website', type: 'url' },
  { key: 'tagline', label: 'Your tagline', type: 'text' },
  { key: 'colours', label: 'Brand colours', type: 'text' },
];
const ANSWERS: Record<string, string> = {
  about: 'We build boats.',
  site: 'https://boats.example.com',
  tagline: 'Afloat since 1990',
  colours: 'Navy and white',
};

type Body = Record<string, unknown>;
interface OutboxMessage {
  to: string;
  subject: string | null;
  text: string;
  html: string | null;
  intake_id: string | null;
}

describe.each(DATABASES)('owner notifications on %s', (database) => {
  let server: TestServer;
  let smtp: Awaited<ReturnType<typeof startSmtpServer>>;
  const portal = () => client(server.url);

  beforeAll(async () => {
    smtp = await startSmtpServer();
    server = await startTestServer(database, { SMTP_URL: smtp.url });
  });
  afterAll(async () => {
    await server.stop();
    await smtp.close();
  });

  async function account() {
    const created = await server.createAccount({ plan: 'agency' });
    const live = client(server.url, created.live_key);
    const test = client(server.url, created.test_key);
    await live.patch('/v1/account', { name: 'Studio Nord' });
    const email = (await live.get<Body>('/v1/account')).body.email as string;
    return { id: created.account_id, live, test, email };
  }

  async function createIntake(api: Client, extra: Body = {}): Promise<string> {
    const created = await api.post<Body>('/v1/intakes', {
      project_name: 'Harbour relaunch',
      client: { email: `c-${Math.random().toString(36).slice(2)}@example.test`, name: 'Dana' },
      items: ITEMS,
      ...extra,
    });
    expect(created.status, created.text).toBe(201);
    return created.body.intake_id as string;
  }

  /** The client saves answers and sends them with the portal's one send. */
  async function clientSends(intakeId: string, keys: string[]): Promise<void> {
    for (const key of keys) {
      const saved = await portal().call('PUT', `/portal/api/${intakeId}/items/${key}`, {
        body: { value: ANSWERS[key] },
      });
      expect(saved.status, saved.text).toBe(200);
    }
    const sent = await portal().post<{ submitted: string[] }>(`/portal/api/${intakeId}/submit`);
    expect(sent.status, sent.text).toBe(200);
    expect(sent.body.submitted.sort()).toEqual([...keys].sort());
  }

  const db = () => server.server.services.db.kysely;

  /** The live clock reaches the intake's batch (a minute after the sending): make it due now and run it. */
  async function batchFallsDue(intakeId: string): Promise<void> {
    const moved = await db()
      .updateTable('jobs')
      .set({ due_at: Date.now() - 1000 })
      .where('kind', '=', 'owner_notice_batch')
      .where('subject_id', '=', intakeId)
      .executeTakeFirst();
    expect(Number(moved.numUpdatedRows)).toBe(1);
    await server.server.worker.runDue({ livemode: true });
  }

  const batchesPending = async (intakeId: string) =>
    (
      await db()
        .selectFrom('jobs')
        .select('id')
        .where('kind', '=', 'owner_notice_batch')
        .where('subject_id', '=', intakeId)
        .execute()
    ).length;

  /** Lets the worker deliver what it was given, then the owner's mail so far. */
  async function settledMail(to: string, atLeast: number) {
    await smtp.waitFor(to, atLeast);
    await new Promise((resolve) => setTimeout(resolve, 600));
    return smtp.received.filter((m) => m.envelopeTo.includes(to));
  }

  async function outbox(api: Client, to: string): Promise<OutboxMessage[]> {
    const answer = await api.get<{ messages: OutboxMessage[] }>('/v1/test_helpers/outbox');
    expect(answer.status, answer.text).toBe(200);
    return answer.body.messages.filter((m) => m.to === to);
  }

  const advance = async (api: Client, seconds: number) => {
    const answer = await api.post('/v1/test_helpers/advance_clock', { seconds });
    expect(answer.status, answer.text).toBe(200);
  };

  async function chooseNotifications(accountId: string, fields: { frequency: string; time_zone?: string }) {
    const browser = await signedInOwner(server, accountId);
    const page = await browser.get(`${server.url}/dashboard/settings`);
    expect(page.status).toBe(200);
    const html = await page.text();
    const saved = await browser.postForm(`${server.url}/dashboard/settings/notifications`, {
      _csrf: hiddenField(html, '_csrf'),
      frequency: fields.frequency,
      time_zone: fields.time_zone ?? '',
    });
    expect(saved.status).toBe(303);
    expect(saved.headers.get('location')).toBe('/dashboard/settings?notice=saved#notifications');
    const after = await (await browser.get(`${server.url}/dashboard/settings`)).text();
    expect(after).toMatch(new RegExp(`name="frequency"\\s+value="${fields.frequency}"[^>]*checked`));
  }

  it('live: three answers sent at once are one email to the account holder, naming the items by label', async () => {
    const { live, email } = await account();
    const id = await createIntake(live);
    await clientSends(id, ['about', 'site', 'tagline']);
    // Nothing yet: the sending waits a minute for the rest of its burst.
    expect(smtp.received.filter((m) => m.envelopeTo.includes(email))).toHaveLength(0);
    expect(await batchesPending(id)).toBe(1);
    await batchFallsDue(id);
    const mail = await settledMail(email, 1);
    expect(mail).toHaveLength(1);
    const [notice] = mail;
    expect(notice?.parsed.subject).toBe('New answers from Dana: Harbour relaunch');
    const text = notice?.parsed.text ?? '';
    for (const label of ['About your company', 'Current website', 'Your tagline'])
      expect(text).toContain(label);
    expect(text).not.toContain('Brand colours');
    expect(text).not.toMatch(/- (about|site|tagline)\n/);
    const appUrl = server.server.services.config.appUrl;
    expect(text).toContain(`${appUrl}/dashboard/intakes/${id}`);
    expect(notice?.parsed.html).toContain(`href="${appUrl}/dashboard/intakes/${id}"`);
    expect(notice?.parsed.from?.text).toContain('Studio Nord');
    expect(await batchesPending(id)).toBe(0);
  });

  it('live: single sends in a burst share one email; the last required answer says "ready for review"', async () => {
    const { live, email } = await account();
    const id = await createIntake(live);
    await clientSends(id, ['about']);
    await clientSends(id, ['site']);
    await clientSends(id, ['tagline', 'colours']);
    // One batch for the whole burst.
    expect(await batchesPending(id)).toBe(1);
    await batchFallsDue(id);
    const mail = await settledMail(email, 1);
    expect(mail).toHaveLength(1);
    expect(mail[0]?.parsed.subject).toBe('Harbour relaunch is ready for your review');
    const text = mail[0]?.parsed.text ?? '';
    for (const label of ['About your company', 'Current website', 'Your tagline', 'Brand colours']) {
      expect(text).toContain(label);
    }
    expect(text).toContain('Every required answer is in');
  });

  it("live: a client's bounced address is told to the owner", async () => {
    const { live, email } = await account();
    const id = await createIntake(live, { client: { email: 'moved-away@example.test', name: 'Dana' } });
    await smtp.waitFor('moved-away@example.test');
    smtp.rejecting.add('moved-away@example.test');
    try {
      const chased = await live.post<Body>(`/v1/intakes/${id}/chase`);
      expect(chased.body).toMatchObject({ status: 'bounced' });
    } finally {
      smtp.rejecting.delete('moved-away@example.test');
    }
    await batchFallsDue(id);
    const mail = await settledMail(email, 1);
    expect(mail).toHaveLength(1);
    expect(mail[0]?.parsed.subject).toBe('An email to moved-away@example.test bounced: Harbour relaunch');
    expect(mail[0]?.parsed.text).toContain('does not accept mail');
  });

  it('live: a portal link that bounces is told too (it is no reminder, so no chase.bounced)', async () => {
    const { live, email } = await account();
    const id = await createIntake(live, { client: { email: 'bounce-typo@example.test', name: 'Dana' } });
    const db = server.server.services.db.kysely;
    for (let i = 0; i < 100; i++) {
      const row = await db
        .selectFrom('messages')
        .select('status')
        .where('intake_id', '=', id)
        .executeTakeFirst();
      if (row?.status === 'bounced') break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await batchFallsDue(id);
    const mail = await settledMail(email, 1);
    expect(mail.map((m) => m.parsed.subject)).toEqual([
      'An email to bounce-typo@example.test bounced: Harbour relaunch',
    ]);
  });

  it('live: a person who turned notifications off gets nothing', async () => {
    const { id: accountId, live, email } = await account();
    await chooseNotifications(accountId, { frequency: 'off' });
    const id = await createIntake(live);
    await clientSends(id, ['about', 'site', 'tagline']);
    await batchFallsDue(id);
    // The batch ran (its notices were taken) and sent nothing.
    expect(await batchesPending(id)).toBe(0);
    const taken = await db()
      .selectFrom('owner_notices')
      .select('batched_at')
      .where('intake_id', '=', id)
      .execute();
    expect(taken).toHaveLength(3);
    expect(taken.every((n) => n.batched_at !== null)).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect(smtp.received.filter((m) => m.envelopeTo.includes(email))).toHaveLength(0);
  });

  it('live: nothing is sent about an intake archived before its batch fell due', async () => {
    const { live, email } = await account();
    const id = await createIntake(live);
    await clientSends(id, ['about']);
    expect((await live.post(`/v1/intakes/${id}/archive`)).status).toBe(200);
    await batchFallsDue(id);
    expect(await batchesPending(id)).toBe(0);
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect(smtp.received.filter((m) => m.envelopeTo.includes(email))).toHaveLength(0);
  });

  it('test mode: the email lands in the test outbox, never at the SMTP server', async () => {
    const { test, email } = await account();
    const id = await createIntake(test);
    await clientSends(id, ['about', 'site', 'tagline']);
    expect(await outbox(test, email)).toHaveLength(0);
    await advance(test, 61);
    const messages = await outbox(test, email);
    expect(messages).toHaveLength(1);
    expect(messages[0]).toMatchObject({
      subject: '[Test] New answers from Dana: Harbour relaunch',
      intake_id: id,
    });
    for (const label of ['About your company', 'Current website', 'Your tagline']) {
      expect(messages[0]?.text).toContain(label);
    }
    expect(messages[0]?.text).toContain('Test mode');
    expect(smtp.received.filter((m) => m.envelopeTo.includes(email))).toHaveLength(0);
  });

  it('test mode: an overdue intake is told once, naming what is still missing', async () => {
    const { test, email } = await account();
    const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
    const id = await createIntake(test, { due_date: tomorrow });
    await clientSends(id, ['about']);
    await advance(test, 61);
    expect((await outbox(test, email)).map((m) => m.subject)).toEqual([
      '[Test] New answers from Dana: Harbour relaunch',
    ]);
    // The due date passes (end of that day, UTC); its notice is batched a minute later.
    await advance(test, 2 * 86_400);
    await advance(test, 61);
    const messages = await outbox(test, email);
    expect(messages.map((m) => m.subject)).toEqual([
      '[Test] Harbour relaunch is overdue',
      '[Test] New answers from Dana: Harbour relaunch',
    ]);
    const text = messages[0]?.text ?? '';
    expect(text).toContain('Still missing:');
    for (const label of ['Current website', 'Your tagline', 'Brand colours']) expect(text).toContain(label);
    expect(text).not.toContain('About your company');
    await advance(test, 7 * 86_400);
    expect(await outbox(test, email)).toHaveLength(2);
  });

  it('test mode: a daily digest gathers the day in one email at 08:00 in the chosen time zone', async () => {
    const { id: accountId, test, email } = await account();
    await chooseNotifications(accountId, { frequency: 'daily', time_zone: 'Europe/Berlin' });
    const first = await createIntake(test);
    const second = await createIntake(test, { project_name: 'Spring catalogue' });
    await clientSends(first, ['about', 'site']);
    await clientSends(second, ['tagline']);
    await advance(test, 61);
    // Each sending's batch ran, and told no one: the only person chose the digest.
    expect(await batchesPending(first)).toBe(0);
    expect(await outbox(test, email)).toHaveLength(0);
    // A day later the 08:00 digest has gone out, once.
    await advance(test, 25 * 3600);
    const digests = await outbox(test, email);
    expect(digests).toHaveLength(1);
    expect(digests[0]?.subject).toMatch(/^\[Test\] Daily summary for Studio Nord: /);
    expect(digests[0]?.intake_id).toBeNull();
    const text = digests[0]?.text ?? '';
    for (const expected of [
      'Harbour relaunch',
      'Spring catalogue',
      'About your company',
      'Current website',
    ]) {
      expect(text).toContain(expected);
    }
    expect(text).toContain('Your tagline');
    expect(text).toContain(`/dashboard/intakes/${first}`);
    expect(text).toContain(`/dashboard/intakes/${second}`);
    // The next day had no news: no second digest, and the one after is planned.
    await advance(test, 24 * 3600);
    expect(await outbox(test, email)).toHaveLength(1);
    const planned = await db()
      .selectFrom('jobs')
      .select(['payload', 'livemode'])
      .where('kind', '=', 'owner_notice_digest')
      .where('account_id', '=', accountId)
      .execute();
    expect(planned.map((j) => j.livemode).sort()).toEqual([0, 1]);
    for (const job of planned) expect((JSON.parse(job.payload) as { at: string }).at).toMatch(/T0[67]:00:00/);
    // Back to "each": the digest jobs are called off.
    await chooseNotifications(accountId, { frequency: 'each' });
    const left = await db()
      .selectFrom('jobs')
      .select('id')
      .where('kind', '=', 'owner_notice_digest')
      .where('account_id', '=', accountId)
      .execute();
    expect(left).toHaveLength(0);
  });

  it('refuses an unknown frequency or time zone with the settings page and a reason', async () => {
    const { id: accountId } = await account();
    const browser = await signedInOwner(server, accountId);
    const html = await (await browser.get(`${server.url}/dashboard/settings`)).text();
    expect(html).toContain('id="notifications"');
    for (const fields of [
      { frequency: 'hourly', time_zone: '' },
      { frequency: 'daily', time_zone: 'Mars/Olympus' },
    ]) {
      const refused = await browser.postForm(`${server.url}/dashboard/settings/notifications`, {
        _csrf: hiddenField(html, '_csrf'),
        ...fields,
      });
      expect(refused.status).toBe(400);
      expect(await refused.text()).toMatch(/frequency|time_zone|time zone/);
    }
    const rows = await db()
      .selectFrom('notice_settings')
      .selectAll()
      .where('account_id', '=', accountId)
      .execute();
    expect(rows).toEqual([]);
  });
});
