import { sql, type Kysely, type Migration } from 'kysely';

/** The filters of the intakes' list that name one value of a column, each by an index of its own. */
const FILTERED = [
  { column: 'status', index: 'intakes_account_status', ordered: 'intakes_account_status_created_id' },
  { column: 'client_email', index: 'intakes_account_client', ordered: 'intakes_account_client_created_id' },
  { column: 'folder_id', index: 'intakes_account_folder', ordered: 'intakes_account_folder_created_id' },
] as const;

/**
 * The list filtered by status, client or folder, read in the list's order (newest first) off an index:
 * each filter's index of migrations 0002 and 0006, `(account_id, livemode, <column>)`, is replaced by
 * one that goes on with `created_at, id`, so a page walks it and stops at the page instead of sorting
 * every intake of the status, client or folder (a third of an account's intakes, for a status). The
 * new index starts with the old one's columns, so every other read by them (a folder's count, the
 * unfiling of a folder's intakes) reads it as before.
 *
 * And, for a status with answers awaiting review (the dashboard's list of one status, which shows those
 * first, and `?status=…&awaiting_review=true`), a partial index of the intakes awaiting review by status,
 * in list order: as migration 0046's, it holds only the intakes awaiting review, so it costs a write only
 * for them.
 *
 * Building them reads the intakes' table four times; on PostgreSQL intake writes wait while it does
 * (docs/deploy.md, "Upgrading without downtime").
 */
export const intakeListFilterIndexes: Migration = {
  async up(db: Kysely<unknown>) {
    for (const { column, index, ordered } of FILTERED) {
      await db.schema
        .createIndex(ordered)
        .on('intakes')
        .columns(['account_id', 'livemode', column, 'created_at', 'id'])
        .execute();
      await db.schema.dropIndex(index).execute();
    }
    await db.schema
      .createIndex('intakes_awaiting_review_status_created_id')
      .on('intakes')
      .columns(['account_id', 'livemode', 'status', 'created_at', 'id'])
      .where(sql.ref('awaiting_review'), '>', sql.lit(0))
      .execute();
  },
  async down(db: Kysely<unknown>) {
    await db.schema.dropIndex('intakes_awaiting_review_status_created_id').execute();
    for (const { column, index, ordered } of FILTERED) {
      await db.schema.createIndex(index).on('intakes').columns(['account_id', 'livemode', column]).execute();
      await db.schema.dropIndex(ordered).execute();
    }
  },
};
