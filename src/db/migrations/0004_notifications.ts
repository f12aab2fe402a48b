import type { Kysely, Migration } from 'kysely';

/**
 * Reminders and outgoing messages: chases (each planned or manual reminder and its outcome), chase_plans
 * (an intake's reminder settings and series state), messages (every email and SMS produced: the test
 * inbox, the dev outbox and the send log) and suppressions (addresses that bounced, per account and mode).
 */
export const notifications: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('chases')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('account_id', 'text', (c) => c.notNull())
      .addColumn('livemode', 'integer', (c) => c.notNull())
      .addColumn('intake_id', 'text', (c) => c.notNull())
      .addColumn('channel', 'text', (c) => c.notNull())
      .addColumn('trigger', 'text', (c) => c.notNull())
      .addColumn('sequence_no', 'integer')
      .addColumn('attempt_no', 'integer')
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('scheduled_for', 'text', (c) => c.notNull())
      .addColumn('sent_at', 'text')
      .addColumn('recipient', 'text')
      .addColumn('message_id', 'text')
      .addColumn('provider_message_id', 'text')
      .addColumn('error', 'text')
      .addColumn('send_attempts', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('locked_until', 'bigint')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex('chases_intake')
      .on('chases')
      .columns(['intake_id', 'status', 'scheduled_for'])
      .execute();
    await db.schema
      .createIndex('chases_account')
      .on('chases')
      .columns(['account_id', 'livemode', 'created_at'])
      .execute();

    await db.schema
      .createTable('chase_plans')
      .addColumn('intake_id', 'text', (c) => c.primaryKey())
      .addColumn('account_id', 'text', (c) => c.notNull())
      .addColumn('livemode', 'integer', (c) => c.notNull())
      .addColumn('interval_minutes', 'integer')
      .addColumn('max_reminders', 'integer', (c) => c.notNull())
      .addColumn('respect_quiet_hours', 'integer', (c) => c.notNull())
      .addColumn('chase_at_time', 'text')
      .addColumn('bounce_next', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('opted_out_at', 'text')
      .addColumn('stalled_at', 'text')
      .addColumn('thanked_at', 'text')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .execute();

    await db.schema
      .createTable('messages')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('account_id', 'text', (c) => c.notNull())
      .addColumn('livemode', 'integer', (c) => c.notNull())
      .addColumn('intake_id', 'text')
      .addColumn('chase_id', 'text')
      .addColumn('channel', 'text', (c) => c.notNull())
      .addColumn('template', 'text', (c) => c.notNull())
      .addColumn('data', 'text', (c) => c.notNull())
      .addColumn('to_address', 'text', (c) => c.notNull())
      .addColumn('subject', 'text')
      .addColumn('text_body', 'text')
      .addColumn('html_body', 'text')
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('provider_message_id', 'text')
      .addColumn('error', 'text')
      .addColumn('send_attempts', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('locked_until', 'bigint')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('sent_at', 'text')
      .execute();
    await db.schema
      .createIndex('messages_account')
      .on('messages')
      .columns(['account_id', 'livemode', 'created_at'])
      .execute();
    await db.schema.createIndex('messages_intake').on('messages').columns(['intake_id']).execute();

    await db.schema
      .createTable('suppressions')
      .addColumn('account_id', 'text', (c) => c.notNull())
      .addColumn('livemode', 'integer', (c) => c.notNull())
      .addColumn('address', 'text', (c) => c.notNull())
      .addColumn('reason', 'text', (c) => c.notNull())
      .addColumn('message_id', 'text')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('suppressions_pk', ['account_id', 'livemode', 'address'])
      .execute();

    // Reminders are most of the job table. The worker claims in (due_at, id) order: with this index
    // both dialects read the first due rows in order instead of sorting every due row (a backlog).
    await db.schema.createIndex('jobs_due_id').on('jobs').columns(['due_at', 'id']).execute();
  },

  async down(db: Kysely<unknown>) {
    await db.schema.dropIndex('jobs_due_id').execute();
    for (const table of ['suppressions', 'messages', 'chase_plans', 'chases']) {
      await db.schema.dropTable(table).execute();
    }
  },
};
