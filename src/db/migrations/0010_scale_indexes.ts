import type { Kysely, Migration } from 'kysely';

/**
 * Indexes for the scaled-out shape (bench/queries.ts measures them at 10k–1M intakes).
 * The intake list pages in (created_at desc, id desc) order: with id in the index, the first page is
 * read straight off the index, with no sort of the account's rows sharing one created_at.
 */
export const scaleIndexes: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createIndex('intakes_account_created_id')
      .on('intakes')
      .columns(['account_id', 'livemode', 'created_at', 'id'])
      .execute();
  },
  async down(db: Kysely<unknown>) {
    await db.schema.dropIndex('intakes_account_created_id').execute();
  },
};
