import type { Kysely, Migration } from 'kysely';

/**
 * Owner notifications: each person's choice (every notice, a daily digest, or none) and the notices
 * themselves, one per public event worth telling the account's people about. A notice waits until the
 * intake's batch takes it (one email per sending), and stays readable for the daily digest.
 */
export const ownerNotices: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('notice_settings')
      .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
      .addColumn('email', 'text', (c) => c.notNull())
      .addColumn('frequency', 'text', (c) => c.notNull())
      .addColumn('time_zone', 'text')
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('notice_settings_pk', ['account_id', 'email'])
      .execute();

    await db.schema
      .createTable('owner_notices')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('account_id', 'text', (c) => c.notNull())
      .addColumn('livemode', 'integer', (c) => c.notNull())
      .addColumn('intake_id', 'text', (c) => c.notNull())
      .addColumn('event_id', 'text', (c) => c.notNull())
      .addColumn('type', 'text', (c) => c.notNull())
      .addColumn('data', 'text', (c) => c.notNull())
      .addColumn('occurred_at', 'text', (c) => c.notNull())
      .addColumn('batched_at', 'text')
      .execute();
    await db.schema
      .createIndex('owner_notices_batch')
      .on('owner_notices')
      .columns(['account_id', 'livemode', 'intake_id', 'batched_at'])
      .execute();
    await db.schema
      .createIndex('owner_notices_day')
      .on('owner_notices')
      .columns(['account_id', 'livemode', 'occurred_at'])
      .execute();
  },
  async down(db: Kysely<unknown>) {
    await db.schema.dropTable('owner_notices').execute();
    await db.schema.dropTable('notice_settings').execute();
  },
};
