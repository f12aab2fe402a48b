import type { Kysely, Migration } from 'kysely';

/** The sign-in email's per-address cool-down reads a user's latest link: one index range read. */
export const signInCooldown: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createIndex('sign_in_tokens_user_created')
      .on('sign_in_tokens')
      .columns(['user_id', 'created_at'])
      .execute();
  },
  async down(db: Kysely<unknown>) {
    await db.schema.dropIndex('sign_in_tokens_user_created').execute();
  },
};
