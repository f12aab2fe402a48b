import type { Kysely, Migration } from 'kysely';

/**
 * The sign-in email's per-address cool-down reads a user's latest unused sign-in link: what each link
 * is for (an invitation does not hold the cool-down), and one index range read per request.
 */
export const signInCooldown: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .alterTable('sign_in_tokens')
      .addColumn('purpose', 'text', (c) => c.notNull().defaultTo('sign_in'))
      .execute();
    await db.schema
      .createIndex('sign_in_tokens_user_created')
      .on('sign_in_tokens')
      .columns(['user_id', 'created_at'])
      .execute();
  },
  async down(db: Kysely<unknown>) {
    await db.schema.dropIndex('sign_in_tokens_user_created').execute();
    await db.schema.alterTable('sign_in_tokens').dropColumn('purpose').execute();
  },
};
