import type { Kysely, Migration } from 'kysely';

/**
 * `jobs.unsent_attempts`: how many of an at-most-once job's attempts are known to have ended before
 * their send began (the handler failed before Job.beginIrreversible). Such a job is retried after a
 * backoff like any other; a claim finding more attempts than these behind it is one whose earlier run
 * may have sent, and is given up.
 */
export const jobUnsentAttempts: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .alterTable('jobs')
      .addColumn('unsent_attempts', 'integer', (c) => c.notNull().defaultTo(0))
      .execute();
  },
  async down(db: Kysely<unknown>) {
    await db.schema.alterTable('jobs').dropColumn('unsent_attempts').execute();
  },
};
