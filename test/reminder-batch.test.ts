import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { suppressAddress } from '../src/modules/notify/notify.service.js';
import { DATABASES } from './helpers/env.js';
import { client, type Client } from './helpers/http.js';
import { startSmtpServer } from './helpers/mail.js';
import { eventually } from './helpers/receivers.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { recordStatements } from './helpers/statements.js';

type Body = Record<string, unknown>;

describe.each(DATABASES)('reminders that fall due together on %s', (database) => {
  let server: TestServer;
  let smtp: Awaited<ReturnType<typeof startSmtpServer>>;

  beforeAll(async () => {
    smtp = await startSmtpServer();
    server = await startTestServer(database, { SMTP_URL: smtp.url });
  });
  afterAll(async () => {
    await server.stop();
    await smtp.close();
  });

  async function account(name: string): Promise<{ id: string; live: Client }> {
    const created = await server.createAccount({ plan: 'agency' });
    const live = client(server.url, created.live_key);
    expect((await live.patch('/v1/account', { name })).status).toBe(200);
    return { id: created.account_id, live };
  }

  async function intake(api: Client, project: string, email: string, items: Body[]): Promise<string> {
    const created = await api.post<Body>('/v1/intakes', {
      project_name: project,
      client: { email, name: 'Dana' },
      items,
    });
    expect(created.status, created.text).toBe(201);
    return created.body.intake_id as string;
  }

  it('are read together, one statement per kind of row, and each goes out as its own', async () => {
    const nord = await account('Studio Nord');
    const sud = await account('Atelier Sud');
    const tag = Math.random().toString(36).slice(2, 8);
    const first = await intake(nord.live, 'Bakery website', `first-${tag}@example.test`, [
      { key: 'logo_text', label: 'Text for the logo', type: 'text' },
    ]);
    // Suppressions keep addresses lower-cased: a client written with capitals is still the one suppressed.
    const blocked = await intake(nord.live, 'Bakery menu', `Blocked-${tag}@Example.test`, [
      { key: 'menu', label: 'Your menu', type: 'longtext' },
    ]);
    const umlaut = await intake(nord.live, 'Bakery signs', `joerg-${tag}@example.test`, [
      { key: 'sign', label: 'Text for the sign', type: 'text' },
    ]);
    const other = await intake(sud.live, 'Gallery catalogue', `other-${tag}@example.test`, [
      { key: 'artists', label: 'Artists shown', type: 'longtext' },
      { key: 'dates', label: 'Opening dates', type: 'text' },
    ]);
    const intakes = [first, blocked, other, umlaut];
    // The invitations go out first (their jobs read senders too): the recording starts after them.
    const invited = () =>
      ['first', 'blocked', 'other', 'joerg'].every((who) =>
        smtp.received.some((mail) =>
          mail.envelopeTo.some((to) => to.toLowerCase() === `${who}-${tag}@example.test`),
        ),
      );
    await eventually(() => Promise.resolve(invited() || undefined), 'the four invitations', 15_000);
    // Only then is the blocked client's address suppressed: suppressed before its invitation's job
    // ran, the invitation itself would not go out.
    const db = server.server.services.db.kysely;
    const suppress = (address: string) =>
      suppressAddress(
        db,
        { accountId: nord.id, livemode: true },
        { address, reason: 'hard_bounce', messageId: null, at: new Date().toISOString() },
      );
    await suppress(`blocked-${tag}@example.test`);
    // An address beyond ASCII (the API takes none, an older row may hold one), capitals too: SQL's
    // lower() leaves the Ö, so this client's suppression is read on its own, as JavaScript lower-cases.
    await db
      .updateTable('intakes')
      .set({ client_email: `JÖRG-${tag}@example.test` })
      .where('id', '=', umlaut)
      .execute();
    await suppress(`jörg-${tag}@example.test`);

    // Each intake's first reminder falls due now, all four at once: the worker's next poll claims them together.
    const recording = recordStatements();
    try {
      const now = Date.now();
      await db.transaction().execute(async (trx) => {
        await trx
          .updateTable('chases')
          .set({ scheduled_for: new Date(now - 1_000).toISOString() })
          .where('intake_id', 'in', intakes)
          .where('status', '=', 'scheduled')
          .execute();
        for (const id of intakes) {
          await trx
            .updateTable('jobs')
            .set({ due_at: now - 1_000 })
            .where('kind', '=', 'dispatch_chase')
            .where('subject_id', 'like', `${id}/%`)
            .execute();
        }
      });
      const settled = async () =>
        db
          .selectFrom('chases')
          .select(['intake_id', 'status', 'error'])
          .where('intake_id', 'in', intakes)
          .where('status', '!=', 'scheduled')
          .execute();
      await eventually(
        async () => ((await settled()).length === 4 ? true : undefined),
        'the four reminders settled',
        15_000,
      );
      const outcomes = new Map((await settled()).map((row) => [row.intake_id, row]));
      expect(outcomes.get(first)).toMatchObject({ status: 'sent' });
      expect(outcomes.get(other)).toMatchObject({ status: 'sent' });
      for (const suppressed of [blocked, umlaut]) {
        expect(outcomes.get(suppressed)).toMatchObject({
          status: 'bounced',
          error: 'suppressed: the address bounced before',
        });
      }
    } finally {
      recording.stop();
    }

    // Each reminder carries its own account's name, project and items, to its own client.
    const reminders = smtp.received.filter((mail) => mail.parsed.subject?.startsWith('Reminder:'));
    const to = (email: string) =>
      reminders.filter((mail) => mail.envelopeTo.some((address) => address.toLowerCase() === email));
    expect(to(`blocked-${tag}@example.test`)).toHaveLength(0);
    expect(to(`jörg-${tag}@example.test`)).toHaveLength(0);
    expect(reminders.filter((mail) => mail.parsed.subject === 'Reminder: Bakery signs')).toHaveLength(0);
    const [toFirst] = to(`first-${tag}@example.test`);
    const [toOther] = to(`other-${tag}@example.test`);
    expect(toFirst?.parsed.subject).toBe('Reminder: Bakery website');
    expect(toFirst?.parsed.from?.value[0]?.name).toBe('Studio Nord');
    expect(toFirst?.parsed.text).toContain('Text for the logo');
    expect(toFirst?.parsed.text).not.toContain('Artists shown');
    expect(toOther?.parsed.subject).toBe('Reminder: Gallery catalogue');
    expect(toOther?.parsed.from?.value[0]?.name).toBe('Atelier Sud');
    expect(toOther?.parsed.text).toContain('Artists shown');
    expect(toOther?.parsed.text).toContain('Opening dates');
    expect(toOther?.parsed.text).not.toContain('Text for the logo');

    // Read together: the four intakes (with whether their clients are suppressed), their items and
    // files, and the two senders, each in one statement.
    const reads = (pattern: RegExp) =>
      recording.statements
        .filter((s) => pattern.test(s.sql.replace(/\s+/g, ' ')))
        .map((s) => s.values.length);
    expect(
      reads(/^select "intakes"\.\*, exists \(select "suppressions"\."address" from "suppressions"/),
    ).toEqual([4]);
    expect(reads(/^select \* from "intake_items" where "intake_id" in /)).toEqual([4]);
    expect(reads(/^select \* from "item_files" where "intake_id" in /)).toEqual([4]);
    expect(reads(/^select \* from "chase_plans" where "intake_id" in /)).toEqual([4]);
    expect(reads(/from "accounts" left join "account_branding"/)).toEqual([2]);
    // The suppression read on its own: only the address beyond ASCII (account, mode, address).
    expect(reads(/^select "address" from "suppressions"/)).toEqual([3]);
    // The chases: together on SQLite; on PostgreSQL each after its intake's lock, in one statement.
    if (database === 'postgres') {
      expect(reads(/^select \* from "chases" where "id" in /)).toEqual([]);
      expect(reads(/^select \* from chase_after_intake_lock\(/)).toEqual([2, 2, 2, 2]);
    } else {
      expect(reads(/^select \* from "chases" where "id" in /)).toEqual([4]);
    }
  });
});
