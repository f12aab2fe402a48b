/**
 * The rows an intake leaves in other tables (its events, the idempotency keys that name it, its pending
 * jobs, the comments on its items and the owner's notices about it) are found by the intake, not by
 * reading those tables whole: the dashboard's intake page, the comments' reads, the notices' batch and a
 * deletion read index ranges on both databases (migration 0047; the account and mode where an index
 * starts with them), and a deletion takes exactly the intake's jobs, the subjects `<id>` and `<id>/…`,
 * and no other.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitingOwnerComments } from '../src/modules/comments/comments.service.js';
import { takeWaitingNotices } from '../src/modules/notices/notices.repository.js';
import { DATABASES } from './helpers/env.js';
import { client, type Client } from './helpers/http.js';
import { planOf, wholeReads } from './helpers/plans.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { signedInOwner, type SignedInBrowser } from './helpers/signed-in.js';
import { recordStatements, type Statement } from './helpers/statements.js';

/** The tables a deletion and the intake's page reach by the intake's id. */
const BY_INTAKE = /\b(?:from|update) "?(events|idempotency_keys|jobs|item_comments|owner_notices)"?/i;

describe.each(DATABASES)("an intake's rows in other tables, found by the intake, on %s", (database) => {
  let server: TestServer;
  let api: Client;
  let owner: SignedInBrowser;
  let accountId: string;

  beforeAll(async () => {
    server = await startTestServer(database);
    const account = await server.createAccount({ plan: 'agency' });
    accountId = account.account_id;
    api = client(server.url, account.live_key);
    owner = await signedInOwner(server, account.account_id);
  });
  afterAll(async () => {
    await server.stop();
  });

  const db = () => server.server.services.db.kysely;

  async function create(key: string): Promise<string> {
    const created = await api.post<{ intake_id: string }>(
      '/v1/intakes',
      {
        project_name: 'Found by the intake',
        client: { email: 'dana@example.com' },
        chase_schedule: 'gentle',
        items: [{ key: 'tagline', label: 'Tagline', type: 'text' }],
      },
      { headers: { 'idempotency-key': key } },
    );
    expect(created.status, created.text).toBe(201);
    return created.body.intake_id;
  }

  /** A pending job, due in a day, with the given subject (as the reminders' are). */
  async function pendingJob(subject: string): Promise<void> {
    const now = Date.now();
    await sql`insert into jobs (id, account_id, livemode, kind, subject_id, payload, due_at, created_at)
      values (${`job_${subject.replaceAll('/', '_')}`}, ${accountId}, 1, 'dispatch_chase', ${subject}, '{}',
        ${now + 86_400_000}, ${new Date(now).toISOString()})`.execute(db());
  }

  async function subjectsPending(prefix: string): Promise<string[]> {
    const rows = await db()
      .selectFrom('jobs')
      .select('subject_id')
      .where('subject_id', 'like', `${prefix}%`)
      .orderBy('subject_id')
      .execute();
    return rows.map((r) => r.subject_id);
  }

  /** The statements that read or delete rows of another table by the intake's id. */
  function byIntake(statements: Statement[], id: string): Statement[] {
    return statements.filter(
      (s) =>
        BY_INTAKE.test(s.sql) &&
        /^\s*(select|delete|with)\b/i.test(s.sql) &&
        s.values.some((v) => typeof v === 'string' && v.startsWith(id)),
    );
  }

  /** Steps of a plan that read a whole table (or the whole of one of its indexes). */
  function wholeTableSteps(steps: string[]): Promise<string[]> {
    const tables = ['events', 'idempotency_keys', 'jobs', 'item_comments', 'owner_notices'];
    return wholeReads(server.server.services.db.kysely, database, steps, tables);
  }

  it("reads the intake's events on its page by the intake", async () => {
    const id = await create('page-1');
    const recorder = recordStatements();
    let page: Response;
    try {
      page = await owner.get(`${server.url}/dashboard/intakes/${id}`);
      expect(page.status).toBe(200);
      await page.text();
    } finally {
      recorder.stop();
    }
    const reads = byIntake(recorder.statements, id).filter((s) => /\bfrom "events"/.test(s.sql));
    expect(reads).toHaveLength(1);
    for (const read of reads) {
      const steps = await planOf(db(), database, read);
      expect(await wholeTableSteps(steps), `${read.sql}\n${steps.join('\n')}`).toEqual([]);
      expect(steps.join('\n'), read.sql).toContain('events_intake');
    }
  });

  it("reads and numbers the intake's comments by the intake's range of their index", async () => {
    const id = await create('comments-1');
    const other = await create('comments-2');
    const comment = async (on: string, body: string) => {
      const posted = await api.post<{ id: string }>(`/v1/intakes/${on}/items/tagline/comments`, { body });
      expect(posted.status, posted.text).toBe(201);
      return posted.body.id;
    };
    await comment(other, 'On another intake');
    const recorder = recordStatements();
    let listed: Awaited<ReturnType<Client['get']>>;
    let waiting: Awaited<ReturnType<typeof waitingOwnerComments>>;
    try {
      const first = await comment(id, 'A first question');
      await comment(id, 'And a second');
      listed = await api.get(`/v1/intakes/${id}/comments?starting_after=${first}`);
      waiting = await waitingOwnerComments(db(), { accountId, livemode: true }, id);
    } finally {
      recorder.stop();
    }
    expect(listed.status, listed.text).toBe(200);
    expect((listed.body as { comments: { body: string }[] }).comments.map((c) => c.body)).toEqual([
      'And a second',
    ]);
    expect(waiting.map((c) => [c.seq, c.body])).toEqual([
      [1, 'A first question'],
      [2, 'And a second'],
    ]);
    const reads = recorder.statements.filter((s) => /\bfrom "item_comments"/.test(s.sql));
    // The next number (twice), the page's cursor, the page, the owner's comments not yet emailed.
    expect(reads.length).toBeGreaterThanOrEqual(5);
    for (const read of reads) {
      const steps = await planOf(db(), database, read);
      expect(await wholeTableSteps(steps), `${read.sql}\n${steps.join('\n')}`).toEqual([]);
    }
  });

  it("takes the intake's waiting notices for its batch by the intake's range of their index", async () => {
    const id = await create('notices-1');
    const other = await create('notices-2');
    const notice = async (intakeId: string, n: number, batched: string | null) =>
      db()
        .insertInto('owner_notices')
        .values({
          id: `ntc_${intakeId}_${n}`,
          account_id: accountId,
          livemode: 1,
          intake_id: intakeId,
          event_id: `evt_${intakeId}_${n}`,
          type: 'item.submitted',
          data: '{}',
          occurred_at: new Date(Date.UTC(2026, 0, 1, 0, n)).toISOString(),
          batched_at: batched,
        })
        .execute();
    await notice(id, 2, null);
    await notice(id, 1, null);
    await notice(id, 3, '2026-01-01T01:00:00.000Z');
    await notice(other, 1, null);
    const recorder = recordStatements();
    let taken: Awaited<ReturnType<typeof takeWaitingNotices>>;
    try {
      taken = await takeWaitingNotices(db(), { accountId, livemode: true }, id, '2026-01-02T00:00:00.000Z');
    } finally {
      recorder.stop();
    }
    expect(taken.map((n) => n.id)).toEqual([`ntc_${id}_1`, `ntc_${id}_2`]);
    const reads = recorder.statements.filter((s) => /\bfrom "owner_notices"/.test(s.sql));
    expect(reads).toHaveLength(1);
    for (const read of reads) {
      const steps = await planOf(db(), database, read);
      expect(await wholeTableSteps(steps), `${read.sql}\n${steps.join('\n')}`).toEqual([]);
    }
    // The other intake's notice still waits; another account's world takes none of this one's.
    const again = await takeWaitingNotices(db(), { accountId: 'acct_other', livemode: true }, other, 'x');
    expect(again).toEqual([]);
    expect(
      (await takeWaitingNotices(db(), { accountId, livemode: true }, other, 'x')).map((n) => n.id),
    ).toEqual([`ntc_${other}_1`]);
  });

  it("deletes the intake's events, keys, jobs, comments and notices by index ranges, and only its jobs", async () => {
    // Sent as it is created: its invitation and reminders are pending jobs.
    const id = await create('deleted-1');
    expect(await subjectsPending(id)).not.toEqual([]);
    const neighbour = await create('deleted-2');
    // Under the intake, and subjects that only look alike: a byte past the range, and another intake's.
    await pendingJob(`${id}/tagline`);
    await pendingJob(`${id}/a/b`);
    await pendingJob(`${id}0`);
    await pendingJob(`${id}A/x`);
    await pendingJob(`${neighbour}/tagline`);
    const recorder = recordStatements();
    try {
      const deleted = await api.delete(`/v1/intakes/${id}`);
      expect(deleted.status, deleted.text).toBeLessThan(300);
    } finally {
      recorder.stop();
    }
    expect(await subjectsPending(id)).toEqual([`${id}0`, `${id}A/x`]);
    expect(await subjectsPending(neighbour)).toContain(`${neighbour}/tagline`);
    const left = async (table: 'events' | 'idempotency_keys') =>
      (
        await sql<{ n: number | string }>`select count(*) as n from ${sql.table(table)}
          where ${sql.ref(table === 'events' ? 'intake_id' : 'resource_id')} = ${id}`.execute(db())
      ).rows[0]?.n;
    expect(Number(await left('events'))).toBe(0);
    expect(Number(await left('idempotency_keys'))).toBe(0);

    const writes = byIntake(recorder.statements, id);
    for (const table of ['events', 'idempotency_keys', 'jobs', 'item_comments', 'owner_notices']) {
      expect(
        writes.some((s) => new RegExp(`^\\s*delete from "${table}"`, 'i').test(s.sql)),
        table,
      ).toBe(true);
    }
    for (const write of writes) {
      const steps = await planOf(db(), database, write);
      expect(await wholeTableSteps(steps), `${write.sql}\n${steps.join('\n')}`).toEqual([]);
    }
  });
});
