import type { Kysely, Migration } from 'kysely';

/**
 * A job may name what it competes for (a webhook endpoint): a kind can then limit how many of its jobs
 * with one key a worker runs at once, so one slow receiver cannot take every slot of its kind.
 */
export const jobConcurrencyKey: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema.alterTable('jobs').addColumn('concurrency_key', 'text').execute();
  },
  async down(db: Kysely<unknown>) {
    await db.schema.alterTable('jobs').dropColumn('concurrency_key').execute();
  },
};
