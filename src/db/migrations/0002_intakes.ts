import type { Kysely, Migration } from 'kysely';

export const intakes: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('intakes')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('account_id', 'text', (c) => c.notNull())
      .addColumn('livemode', 'integer', (c) => c.notNull())
      .addColumn('project_name', 'text', (c) => c.notNull())
      .addColumn('client_email', 'text', (c) => c.notNull())
      .addColumn('client_name', 'text')
      .addColumn('client_language', 'text', (c) => c.notNull())
      .addColumn('client_phone', 'text')
      .addColumn('client_timezone', 'text')
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('chase_schedule', 'text', (c) => c.notNull())
      .addColumn('due_date', 'text')
      .addColumn('retention_mode', 'text', (c) => c.notNull())
      .addColumn('retention_days', 'integer')
      .addColumn('retention_anonymize', 'integer', (c) => c.notNull())
      .addColumn('template_id', 'text')
      .addColumn('client_brief', 'text')
      .addColumn('approval_counter', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('results_cursor', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .addColumn('sent_at', 'text')
      .addColumn('completed_at', 'text')
      .addColumn('archived_at', 'text')
      .addColumn('client_first_viewed_at', 'text')
      .addColumn('client_last_seen_at', 'text')
      .addColumn('results_collected_at', 'text')
      .addColumn('purged_at', 'text')
      .addColumn('anonymized_at', 'text')
      .execute();
    await db.schema
      .createIndex('intakes_account_created')
      .on('intakes')
      .columns(['account_id', 'livemode', 'created_at'])
      .execute();
    await db.schema
      .createIndex('intakes_account_status')
      .on('intakes')
      .columns(['account_id', 'livemode', 'status'])
      .execute();
    await db.schema
      .createIndex('intakes_account_client')
      .on('intakes')
      .columns(['account_id', 'livemode', 'client_email'])
      .execute();

    await db.schema
      .createTable('intake_items')
      .addColumn('intake_id', 'text', (c) => c.notNull().references('intakes.id').onDelete('cascade'))
      .addColumn('account_id', 'text', (c) => c.notNull())
      .addColumn('livemode', 'integer', (c) => c.notNull())
      .addColumn('key', 'text', (c) => c.notNull())
      .addColumn('position', 'integer', (c) => c.notNull())
      .addColumn('definition', 'text', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('value_json', 'text')
      .addColumn('secret_ciphertext', 'text')
      .addColumn('revision_note', 'text')
      .addColumn('saved_at', 'text')
      .addColumn('submitted_at', 'text')
      .addColumn('approved_at', 'text')
      .addColumn('approval_seq', 'integer')
      .addColumn('secret_revealed_at', 'text')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('intake_items_pk', ['intake_id', 'key'])
      .execute();

    await db.schema
      .createTable('item_files')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('intake_id', 'text', (c) => c.notNull().references('intakes.id').onDelete('cascade'))
      .addColumn('account_id', 'text', (c) => c.notNull())
      .addColumn('livemode', 'integer', (c) => c.notNull())
      .addColumn('item_key', 'text', (c) => c.notNull())
      .addColumn('storage_key', 'text', (c) => c.notNull())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('size', 'bigint', (c) => c.notNull())
      .addColumn('content_type', 'text', (c) => c.notNull())
      .addColumn('width', 'integer')
      .addColumn('height', 'integer')
      .addColumn('sha256', 'text', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex('item_files_item')
      .on('item_files')
      .columns(['intake_id', 'item_key'])
      .execute();

    await db.schema
      .createTable('templates')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('account_id', 'text', (c) => c.notNull())
      .addColumn('livemode', 'integer', (c) => c.notNull())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('items', 'text', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex('templates_account')
      .on('templates')
      .columns(['account_id', 'livemode', 'created_at'])
      .execute();

    // Work for the worker. due_at is real time (epoch ms): a test-mode clock advance moves its
    // account's test jobs earlier, so one comparison finds every due job of both worlds.
    await db.schema
      .createTable('jobs')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('account_id', 'text', (c) => c.notNull())
      .addColumn('livemode', 'integer', (c) => c.notNull())
      .addColumn('kind', 'text', (c) => c.notNull())
      .addColumn('subject_id', 'text', (c) => c.notNull())
      .addColumn('payload', 'text', (c) => c.notNull())
      .addColumn('due_at', 'bigint', (c) => c.notNull())
      .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('locked_until', 'bigint')
      .addColumn('last_error', 'text')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('jobs_due').on('jobs').columns(['due_at']).execute();
    await db.schema.createIndex('jobs_subject').on('jobs').columns(['subject_id', 'kind']).execute();
    await db.schema.createIndex('jobs_account').on('jobs').columns(['account_id', 'livemode']).execute();

    // Transactional outbox of domain events: written with the change that caused them.
    await db.schema
      .createTable('events')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('account_id', 'text', (c) => c.notNull())
      .addColumn('livemode', 'integer', (c) => c.notNull())
      .addColumn('type', 'text', (c) => c.notNull())
      .addColumn('intake_id', 'text')
      .addColumn('payload', 'text', (c) => c.notNull())
      .addColumn('occurred_at', 'text', (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex('events_account')
      .on('events')
      .columns(['account_id', 'livemode', 'occurred_at'])
      .execute();
  },

  async down(db: Kysely<unknown>) {
    for (const table of ['events', 'jobs', 'templates', 'item_files', 'intake_items', 'intakes']) {
      await db.schema.dropTable(table).execute();
    }
  },
};
