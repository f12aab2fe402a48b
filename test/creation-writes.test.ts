import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATABASES } from './helpers/env.js';
import { client, type Client } from './helpers/http.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { recordStatements, type Statement } from './helpers/statements.js';

type Body = Record<string, unknown>;

/**
 * An intake created sent: its creating transaction writes the plan, the people, the invitations, the
 * first reminders and the overdue check from what it has just written, and reads none of it back. The
 * rows are the ones a draft sent later gets (POST …/send, which starts from the stored rows).
 */
describe.each(DATABASES)('an intake created sent, on %s', (database) => {
  let server: TestServer;
  let api: Client;

  beforeAll(async () => {
    server = await startTestServer(database);
    const account = await server.createAccount({ plan: 'agency' });
    api = client(server.url, account.live_key);
  });
  afterAll(() => server.stop());

  const body = (send: boolean, tag: string): Body => ({
    project_name: `Website ${tag}`,
    client: { email: `client-${tag}@example.test`, name: 'Dana' },
    also_notify: [{ email: `partner-${tag}@example.test`, name: 'Sam' }],
    due_date: '2031-06-30',
    respect_quiet_hours: false,
    items: [
      { key: 'logo', label: 'Your logo', type: 'file' },
      { key: 'about', label: 'About you', type: 'longtext', required: false },
    ],
    send,
  });

  /** What the intake's sending left: reminders, messages and jobs, relative to its sending time. */
  async function sentRows(intakeId: string) {
    const db = server.server.services.db.kysely;
    const intake = await db
      .selectFrom('intakes')
      .select('sent_at')
      .where('id', '=', intakeId)
      .executeTakeFirstOrThrow();
    const sentAt = Date.parse(intake.sent_at ?? '');
    const recipients = await db
      .selectFrom('intake_recipients')
      .select(['id', 'email'])
      .where('intake_id', '=', intakeId)
      .execute();
    const person = (id: string | null) =>
      id === null ? 'client' : (recipients.find((r) => r.id === id)?.email.split('-')[0] ?? id);
    const chases = await db
      .selectFrom('chases')
      .select(['recipient_id', 'sequence_no', 'status', 'scheduled_for'])
      .where('intake_id', '=', intakeId)
      .execute();
    const messages = await db
      .selectFrom('messages')
      .select(['template', 'to_address'])
      .where('intake_id', '=', intakeId)
      .execute();
    const jobs = await db.selectFrom('jobs').select(['kind', 'subject_id', 'due_at']).execute();
    return {
      chases: chases
        .map((c) => ({
          person: person(c.recipient_id ?? null),
          sequence: c.sequence_no,
          status: c.status,
          afterSending: Date.parse(c.scheduled_for ?? '') - sentAt,
        }))
        .sort((a, b) => a.person.localeCompare(b.person)),
      messages: messages
        .map((m) => ({ template: m.template, to: m.to_address.split('-')[0] }))
        .sort((a, b) => (a.to ?? '').localeCompare(b.to ?? '')),
      overdueChecks: jobs
        .filter((job) => job.kind === 'intake_overdue' && job.subject_id.includes(intakeId))
        .map((job) => new Date(Number(job.due_at)).toISOString().slice(0, 10)),
    };
  }

  const readsBack = (statements: readonly Statement[]) =>
    statements
      .map((s) => s.sql.replace(/\s+/g, ' ').replaceAll('"', '').toLowerCase())
      .filter(
        (text) =>
          /^select .* from (chase_plans|intake_recipients|intake_items|chases)\b/.test(text) ||
          /^delete from jobs\b/.test(text),
      );

  it('writes what a draft sent later gets, reading none of it back', async () => {
    const recording = recordStatements();
    let created;
    try {
      created = await api.post<Body>('/v1/intakes', body(true, 'direct'));
    } finally {
      recording.stop();
    }
    expect(created.status, created.text).toBe(201);
    const direct = created.body.intake_id as string;

    // The creating transaction's work: from the intake's row to the audit entry, its last write.
    const texts = recording.statements.map((s) => s.sql.replace(/\s+/g, ' ').toLowerCase());
    const first = texts.findIndex((text) => text.includes('insert into "intakes"'));
    const last = texts.findIndex(
      (text, index) => index > first && text.includes('insert into "audit_entries"'),
    );
    expect(first).toBeGreaterThanOrEqual(0);
    expect(last).toBeGreaterThan(first);
    const transaction = recording.statements.slice(first, last + 1);
    expect(transaction.some((s) => /insert into "?chases"?/i.test(s.sql))).toBe(true);
    expect(readsBack(transaction)).toEqual([]);

    const draft = await api.post<Body>('/v1/intakes', body(false, 'later'));
    expect(draft.status, draft.text).toBe(201);
    const later = draft.body.intake_id as string;
    expect((await api.post(`/v1/intakes/${later}/send`)).status).toBe(200);

    const [directRows, laterRows] = await Promise.all([sentRows(direct), sentRows(later)]);
    expect(directRows).toEqual(laterRows);
    expect(directRows.chases).toEqual([
      expect.objectContaining({ person: 'client', sequence: 1, status: 'scheduled' }),
      expect.objectContaining({ person: 'partner', sequence: 1, status: 'scheduled' }),
    ]);
    expect(directRows.messages).toEqual([
      { template: 'invitation', to: 'client' },
      { template: 'invitation', to: 'partner' },
    ]);
    expect(directRows.overdueChecks).toHaveLength(1);
  });
});
