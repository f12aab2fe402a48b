import { sql, type Kysely, type Migration } from 'kysely';

const CUT_OFF = 'The sender stopped before recording the outcome; not retried, to never send twice.';

/**
 * Reminders and messages are sent by plain jobs: the job's lease is the only claim, and this release
 * neither writes the `sending` status nor reads the `locked_until` lease of chases and messages. A row
 * left `sending` by a process of the previous release that stopped mid-send (its lease ran out) may
 * have gone out: it is recorded failed, never sent again, as that process's successor would have done;
 * a chase recorded so takes the intake's next attempt number. A row whose lease still runs belongs to
 * a process of the previous release that is still up: it records the outcome itself.
 *
 * The `locked_until` columns stay: processes of the previous release write them until the last one is
 * replaced (a column is removed one release after the code stops using it).
 */
export const sendsAreJobs: Migration = {
  async up(db: Kysely<unknown>) {
    const now = Date.now();
    await sql`update messages set status = 'failed', error = ${CUT_OFF}, locked_until = null
      where status = 'sending' and (locked_until is null or locked_until < ${now})`.execute(db);
    await sql`update chases set status = 'failed', error = ${CUT_OFF}, locked_until = null,
        attempt_no = (select coalesce(max(c.attempt_no), 0) + 1 from chases c where c.intake_id = chases.intake_id)
      where status = 'sending' and (locked_until is null or locked_until < ${now})`.execute(db);
  },
  async down() {
    // Nothing to undo: rows recorded failed stay failed.
  },
};
