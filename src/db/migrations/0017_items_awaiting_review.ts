import type { Kysely, Migration } from 'kysely';

/**
 * Which of an account's intakes have answers waiting for review (the dashboard lists them first, and
 * `GET /v1/intakes?awaiting_review=` filters on it): one range read of this index, instead of a scan
 * of every account's items.
 */
export const itemsAwaitingReview: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createIndex('intake_items_awaiting_review')
      .on('intake_items')
      .columns(['account_id', 'livemode', 'status', 'intake_id'])
      .execute();
  },
  async down(db: Kysely<unknown>) {
    await db.schema.dropIndex('intake_items_awaiting_review').execute();
  },
};
