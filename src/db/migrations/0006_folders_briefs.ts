import type { Kysely, Migration } from 'kysely';

/**
 * Folders for intakes, and who decided an owner item (decisions). Brief files live in item_files
 * under a reserved item key (see intakes/brief-files.service.ts), so they need no table of their own.
 */
export const foldersBriefs: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('folders')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('account_id', 'text', (c) => c.notNull())
      .addColumn('livemode', 'integer', (c) => c.notNull())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex('folders_account_name')
      .on('folders')
      .columns(['account_id', 'livemode', 'name'])
      .execute();
    await db.schema.alterTable('intakes').addColumn('folder_id', 'text').execute();
    await db.schema
      .createIndex('intakes_account_folder')
      .on('intakes')
      .columns(['account_id', 'livemode', 'folder_id'])
      .execute();
    await db.schema.alterTable('intake_items').addColumn('decided_by', 'text').execute();
  },
  async down(db: Kysely<unknown>) {
    await db.schema.alterTable('intake_items').dropColumn('decided_by').execute();
    await db.schema.dropIndex('intakes_account_folder').execute();
    await db.schema.alterTable('intakes').dropColumn('folder_id').execute();
    await db.schema.dropTable('folders').execute();
  },
};
