import { sql, type Kysely, type Migration } from 'kysely';

const CUT_OFF = 'The sender stopped before recording the outcome; not retried, to never send twice.';

/**
 * Reminders and messages are sent by plain jobs: the job's lease is the only claim, so the `sending`
 * status and the `locked_until` lease of chases and messages go. A row left `sending` by a process
 * that stopped mid-send may have gone out: it is recorded failed (never sent again), as that process's
 * successor would have done. A chase recorded so takes the intake's next attempt number.
 */
export const sendsAreJobs: Migration = {
  async up(db: Kysely<unknown>) {
    await sql`update messages set status = 'failed', error = ${CUT_OFF} where status = 'sending'`.execute(db);
    await sql`update chases set status = 'failed', error = ${CUT_OFF},
        attempt_no = (select coalesce(max(c.attempt_no), 0) + 1 from chases c where c.intake_id = chases.intake_id)
      where status = 'sending'`.execute(db);
    await db.schema.alterTable('messages').dropColumn('locked_until').execute();
    await db.schema.alterTable('chases').dropColumn('locked_until').execute();
  },
  async down(db: Kysely<unknown>) {
    await db.schema.alterTable('chases').addColumn('locked_until', 'bigint').execute();
    await db.schema.alterTable('messages').addColumn('locked_until', 'bigint').execute();
  },
};
