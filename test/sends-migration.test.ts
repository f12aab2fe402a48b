import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sendsAreJobs } from '../src/db/migrations/0016_sends_are_jobs.js';
import { DATABASES } from './helpers/env.js';
import { openTestDatabase } from './helpers/server.js';

/**
 * 0016: sends are jobs. A chase or message left `sending` by a process of the previous release whose
 * lease ran out is recorded failed (never sent again); one whose lease still runs is left to it.
 */
describe.each(DATABASES)('migration 0016_sends_are_jobs on %s', (database) => {
  let opened: Awaited<ReturnType<typeof openTestDatabase>>;

  beforeAll(async () => {
    opened = await openTestDatabase(database);
  });
  afterAll(async () => {
    await opened?.close();
  });

  it('records sends cut off by a stopped sender as failed, and leaves live claims alone', async () => {
    const db = opened.db.kysely;
    const expired = Date.now() - 60_000;
    const live = Date.now() + 60_000;
    const chase = (id: string, status: string, attemptNo: number | null, lockedUntil: number | null) =>
      sql`insert into chases (id, account_id, livemode, intake_id, channel, trigger, sequence_no, attempt_no,
          status, scheduled_for, send_attempts, locked_until, created_at, updated_at)
        values (${id}, 'acct_m15', 1, 'in_m15', 'email', 'schedule', 1, ${attemptNo}, ${status},
          '2026-01-01T00:00:00.000Z', 1, ${lockedUntil}, '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')`.execute(
        db,
      );
    const message = (id: string, status: string, lockedUntil: number | null) =>
      sql`insert into messages (id, account_id, livemode, intake_id, chase_id, channel, template, data, to_address,
          status, send_attempts, locked_until, created_at)
        values (${id}, 'acct_m15', 1, 'in_m15', null, 'email', 'invitation', '{}', 'c@example.com', ${status}, 1,
          ${lockedUntil}, '2026-01-01T00:00:00.000Z')`.execute(db);
    await chase('ch_sent', 'sent', 1, null);
    await chase('ch_cut', 'sending', null, expired);
    await chase('ch_live', 'sending', null, live);
    await chase('ch_next', 'scheduled', null, null);
    await message('msg_cut', 'sending', expired);
    await message('msg_live', 'sending', live);
    await message('msg_pending', 'pending', null);

    await sendsAreJobs.up(db);

    const chases = await db
      .selectFrom('chases')
      .select(['id', 'status', 'attempt_no', 'error'])
      .where('intake_id', '=', 'in_m15')
      .orderBy('id')
      .execute();
    expect(chases).toEqual([
      { id: 'ch_cut', status: 'failed', attempt_no: 2, error: expect.stringContaining('never send twice') },
      { id: 'ch_live', status: 'sending', attempt_no: null, error: null },
      { id: 'ch_next', status: 'scheduled', attempt_no: null, error: null },
      { id: 'ch_sent', status: 'sent', attempt_no: 1, error: null },
    ]);
    const messages = await db
      .selectFrom('messages')
      .select(['id', 'status'])
      .where('intake_id', '=', 'in_m15')
      .orderBy('id')
      .execute();
    expect(messages).toEqual([
      { id: 'msg_cut', status: 'failed' },
      { id: 'msg_live', status: 'sending' },
      { id: 'msg_pending', status: 'pending' },
    ]);
  });
});
