import type { Kysely, Migration } from 'kysely';

/** The client portal's branding: one optional row per account (logo and accent colour). */
export const portal: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('account_branding')
      .addColumn('account_id', 'text', (c) => c.primaryKey().references('accounts.id').onDelete('cascade'))
      .addColumn('logo_url', 'text')
      .addColumn('accent_color', 'text')
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .execute();
  },
  async down(db: Kysely<unknown>) {
    await db.schema.dropTable('account_branding').execute();
  },
};
