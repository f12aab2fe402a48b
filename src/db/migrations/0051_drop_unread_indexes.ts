import type { Kysely, Migration } from 'kysely';

/**
 * Two indexes no statement reads any more, dropped: each was one more write for every row it indexed.
 *
 * - `intake_items_awaiting_review` (migration 0017), `(account_id, livemode, status, intake_id)`: the
 *   lists found the intakes with answers awaiting review through it until each intake kept its count
 *   (0044) and those intakes had a partial index of their own (0046). Every change of an item's status
 *   moved its entry.
 * - `events_account` (0002), `(account_id, livemode, occurred_at)`: an intake's events are read by the
 *   intake (0047); nothing reads an account's events in time order. Every event wrote an entry.
 *
 * The release before this one reads neither, so its processes run on beside this migration during an
 * upgrade (docs/deploy.md, "Upgrading without downtime").
 */
export const dropUnreadIndexes: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema.dropIndex('intake_items_awaiting_review').execute();
    await db.schema.dropIndex('events_account').execute();
  },
  async down(db: Kysely<unknown>) {
    await db.schema
      .createIndex('events_account')
      .on('events')
      .columns(['account_id', 'livemode', 'occurred_at'])
      .execute();
    await db.schema
      .createIndex('intake_items_awaiting_review')
      .on('intake_items')
      .columns(['account_id', 'livemode', 'status', 'intake_id'])
      .execute();
  },
};
