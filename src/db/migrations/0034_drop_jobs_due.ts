import type { Kysely, Migration } from 'kysely';

/**
 * `jobs_due` (due_at) is a prefix of `jobs_due_id` (due_at, id), which serves every query it served;
 * each job written, claimed away or deleted paid for both. Dropping it leaves one index write fewer
 * per job, on the path every webhook attempt, email and reminder takes.
 */
export const dropJobsDue: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema.dropIndex('jobs_due').execute();
  },
  async down(db: Kysely<unknown>) {
    await db.schema.createIndex('jobs_due').on('jobs').columns(['due_at']).execute();
  },
};
