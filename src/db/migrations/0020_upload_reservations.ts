import type { Kysely, Migration } from 'kysely';

/**
 * Bytes an unfinished resumable upload will take, reserved when it starts: the storage quota counts
 * them with the stored files, so partial uploads cannot hold space the usage does not show. A row
 * goes when the upload finishes, is cancelled, or expires (tus keeps partials a week).
 */
export const uploadReservations: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('upload_reservations')
      .addColumn('upload_id', 'text', (c) => c.primaryKey())
      .addColumn('account_id', 'text', (c) => c.notNull())
      .addColumn('livemode', 'integer', (c) => c.notNull())
      .addColumn('intake_id', 'text', (c) => c.notNull())
      .addColumn('bytes', 'bigint', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex('upload_reservations_account')
      .on('upload_reservations')
      .columns(['account_id', 'livemode', 'created_at'])
      .execute();
  },
  async down(db: Kysely<unknown>) {
    await db.schema.dropTable('upload_reservations').execute();
  },
};
