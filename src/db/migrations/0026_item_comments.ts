import type { Kysely, Migration } from 'kysely';

/**
 * A conversation on every item: comments by the owner (from the API, the agent tools or the
 * dashboard) and by the client (from the portal). An owner's comment waits for the intake's
 * batched email to the client (emailed_at).
 */
export const itemComments: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('item_comments')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('account_id', 'text', (c) => c.notNull())
      .addColumn('livemode', 'integer', (c) => c.notNull())
      .addColumn('intake_id', 'text', (c) => c.notNull())
      .addColumn('item_key', 'text', (c) => c.notNull())
      .addColumn('author', 'text', (c) => c.notNull())
      .addColumn('actor_type', 'text', (c) => c.notNull())
      .addColumn('actor_id', 'text')
      .addColumn('body', 'text', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('seq', 'integer', (c) => c.notNull())
      .addColumn('emailed_at', 'text')
      .execute();
    await db.schema
      .createIndex('item_comments_intake')
      .on('item_comments')
      .columns(['account_id', 'livemode', 'intake_id', 'seq'])
      .execute();
  },
  async down(db: Kysely<unknown>) {
    await db.schema.dropTable('item_comments').execute();
  },
};
