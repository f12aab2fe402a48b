import type { Kysely, Migration } from 'kysely';

/**
 * Issue 8, second half: the people besides the client who get an intake's emails (intake_recipients,
 * each with their own reminder series, opt-out and bounce stall), which series a chase belongs to
 * (chases.recipient_id, null for the client's), the due date intake.overdue fired for
 * (chase_plans.overdue_fired_for), the reviewer's latest note on an item (intake_items.review_note),
 * and each item's history of submissions, revisions and approvals (item_history).
 */
export const recipientsHistory: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('intake_recipients')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('account_id', 'text', (c) => c.notNull())
      .addColumn('livemode', 'integer', (c) => c.notNull())
      .addColumn('intake_id', 'text', (c) => c.notNull())
      .addColumn('email', 'text', (c) => c.notNull())
      .addColumn('name', 'text')
      .addColumn('position', 'integer', (c) => c.notNull())
      .addColumn('opted_out_at', 'text')
      .addColumn('stalled_at', 'text')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex('intake_recipients_email')
      .on('intake_recipients')
      .columns(['intake_id', 'email'])
      .unique()
      .execute();
    await db.schema
      .createIndex('intake_recipients_account')
      .on('intake_recipients')
      .columns(['account_id', 'livemode', 'intake_id'])
      .execute();

    await db.schema.alterTable('chases').addColumn('recipient_id', 'text').execute();
    await db.schema.alterTable('chase_plans').addColumn('overdue_fired_for', 'text').execute();
    await db.schema.alterTable('intake_items').addColumn('review_note', 'text').execute();

    await db.schema
      .createTable('item_history')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('account_id', 'text', (c) => c.notNull())
      .addColumn('livemode', 'integer', (c) => c.notNull())
      .addColumn('intake_id', 'text', (c) => c.notNull())
      .addColumn('item_key', 'text', (c) => c.notNull())
      .addColumn('action', 'text', (c) => c.notNull())
      .addColumn('actor_type', 'text', (c) => c.notNull())
      .addColumn('actor_id', 'text')
      .addColumn('note', 'text')
      .addColumn('occurred_at', 'text', (c) => c.notNull())
      .addColumn('seq', 'integer', (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex('item_history_intake')
      .on('item_history')
      .columns(['intake_id', 'item_key', 'seq'])
      .execute();
  },

  async down(db: Kysely<unknown>) {
    await db.schema.dropTable('item_history').execute();
    await db.schema.alterTable('intake_items').dropColumn('review_note').execute();
    await db.schema.alterTable('chase_plans').dropColumn('overdue_fired_for').execute();
    await db.schema.alterTable('chases').dropColumn('recipient_id').execute();
    await db.schema.dropTable('intake_recipients').execute();
  },
};
