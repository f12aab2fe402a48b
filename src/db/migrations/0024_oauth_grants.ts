import { sql, type Kysely, type Migration } from 'kysely';

/**
 * Every refresh token belongs to one grant: the authorization code that started it, carried through
 * each rotation. A replayed code or a reused (already rotated) refresh token then revokes the whole
 * grant's tokens at once (OAuth 2.1 §4.1.3 and §4.3.1), found through this index. Tokens issued
 * before this migration are each their own grant.
 */
export const oauthGrants: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema.alterTable('oauth_refresh_tokens').addColumn('grant_id', 'text').execute();
    await sql`UPDATE oauth_refresh_tokens SET grant_id = id`.execute(db);
    await db.schema
      .createIndex('oauth_refresh_tokens_grant')
      .on('oauth_refresh_tokens')
      .column('grant_id')
      .execute();
  },
  async down(db: Kysely<unknown>) {
    await db.schema.dropIndex('oauth_refresh_tokens_grant').execute();
    await db.schema.alterTable('oauth_refresh_tokens').dropColumn('grant_id').execute();
  },
};
