import { sql, type Kysely, type Migration } from 'kysely';

/**
 * The refresh tokens of agents' sign-ins, read by indexes. A sign-in's refresh revokes its token and
 * issues another, and revoked tokens stay until they expire (30 days), so the table holds every
 * account's refreshes of the last month. Three reads of it had no index and read it whole:
 *
 * - the plan's cap on keys and sign-ins counts the account's live grants, at every key created and
 *   every sign-in, holding the account's lock: by a partial index of the tokens not revoked, per
 *   account, by expiry (the statement states `revoked_at is null`, the index's own condition), which
 *   also serves ending the sign-ins of a person who leaves the account;
 * - the hourly sweep of expired tokens, by an index of their expiry;
 * - revoking an access token (RFC 7009) finds its refresh token by the access token's key, by an index
 *   of that column.
 *
 * Building them reads the table once each; on PostgreSQL its writers (sign-ins, refreshes) wait
 * meanwhile (docs/deploy.md, "Upgrading without downtime").
 */
export const oauthRefreshTokenIndexes: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createIndex('oauth_refresh_tokens_live')
      .on('oauth_refresh_tokens')
      .columns(['account_id', 'expires_at', 'grant_id'])
      .where(sql.ref('revoked_at'), 'is', null)
      .execute();
    await db.schema
      .createIndex('oauth_refresh_tokens_expires')
      .on('oauth_refresh_tokens')
      .column('expires_at')
      .execute();
    await db.schema
      .createIndex('oauth_refresh_tokens_access_key')
      .on('oauth_refresh_tokens')
      .column('access_key_id')
      .execute();
  },
  async down(db: Kysely<unknown>) {
    for (const index of [
      'oauth_refresh_tokens_access_key',
      'oauth_refresh_tokens_expires',
      'oauth_refresh_tokens_live',
    ]) {
      await db.schema.dropIndex(index).execute();
    }
  },
};
