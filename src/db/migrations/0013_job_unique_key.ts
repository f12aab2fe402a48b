import type { Kysely, Migration } from 'kysely';

/**
 * A job that must exist once (one reminder per chase, one attempt per delivery) carries a unique key:
 * enqueueing it again while it is pending adds nothing. Jobs without a key (null) are not constrained.
 */
export const jobUniqueKey: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema.alterTable('jobs').addColumn('unique_key', 'text').execute();
    await db.schema.createIndex('jobs_unique_key').on('jobs').column('unique_key').unique().execute();
  },
  async down(db: Kysely<unknown>) {
    await db.schema.dropIndex('jobs_unique_key').execute();
    await db.schema.alterTable('jobs').dropColumn('unique_key').execute();
  },
};
