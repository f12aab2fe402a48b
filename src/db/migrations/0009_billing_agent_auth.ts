import type { Kysely, Migration } from 'kysely';

/**
 * Plans and billing (the account's billing customer, the local provider's checkout and portal
 * sessions) and agent sign-in: expiring API keys (OAuth access tokens), OAuth clients, authorization
 * codes, refresh tokens and device authorizations (RFC 8628). Secrets (codes, tokens, device codes)
 * are stored as SHA-256 hashes only.
 */
export const billingAgentAuth: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('account_billing')
      .addColumn('account_id', 'text', (c) => c.primaryKey().references('accounts.id').onDelete('cascade'))
      .addColumn('provider', 'text', (c) => c.notNull())
      .addColumn('customer_id', 'text')
      .addColumn('subscription_id', 'text')
      .addColumn('subscription_status', 'text')
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex('account_billing_customer')
      .on('account_billing')
      .columns(['customer_id'])
      .execute();

    await db.schema
      .createTable('billing_sessions')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
      .addColumn('kind', 'text', (c) => c.notNull())
      .addColumn('plan', 'text')
      .addColumn('return_url', 'text', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('expires_at', 'text', (c) => c.notNull())
      .addColumn('completed_at', 'text')
      .execute();
    await db.schema
      .createIndex('billing_sessions_account')
      .on('billing_sessions')
      .columns(['account_id', 'created_at'])
      .execute();

    // OAuth access tokens are API keys that stop working at this instant; other keys never expire.
    await db.schema.alterTable('api_keys').addColumn('expires_at', 'text').execute();

    await db.schema
      .createTable('oauth_clients')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('redirect_uris', 'text', (c) => c.notNull())
      .addColumn('auth_method', 'text', (c) => c.notNull())
      .addColumn('secret_hash', 'text')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .execute();

    await db.schema
      .createTable('oauth_codes')
      .addColumn('code_hash', 'text', (c) => c.primaryKey())
      .addColumn('client_id', 'text', (c) => c.notNull().references('oauth_clients.id').onDelete('cascade'))
      .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
      .addColumn('livemode', 'integer', (c) => c.notNull())
      .addColumn('user_id', 'text', (c) => c.notNull())
      .addColumn('scopes', 'text', (c) => c.notNull())
      .addColumn('redirect_uri', 'text', (c) => c.notNull())
      .addColumn('code_challenge', 'text', (c) => c.notNull())
      .addColumn('resource', 'text')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('expires_at', 'text', (c) => c.notNull())
      .addColumn('used_at', 'text')
      .execute();

    await db.schema
      .createTable('oauth_refresh_tokens')
      .addColumn('token_hash', 'text', (c) => c.primaryKey())
      .addColumn('id', 'text', (c) => c.notNull().unique())
      .addColumn('client_id', 'text', (c) => c.notNull().references('oauth_clients.id').onDelete('cascade'))
      .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
      .addColumn('livemode', 'integer', (c) => c.notNull())
      .addColumn('user_id', 'text', (c) => c.notNull())
      .addColumn('scopes', 'text', (c) => c.notNull())
      .addColumn('resource', 'text')
      .addColumn('access_key_id', 'text')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('expires_at', 'text', (c) => c.notNull())
      .addColumn('revoked_at', 'text')
      .execute();

    await db.schema
      .createTable('device_authorizations')
      .addColumn('device_code_hash', 'text', (c) => c.primaryKey())
      .addColumn('user_code', 'text', (c) => c.notNull().unique())
      .addColumn('client_name', 'text', (c) => c.notNull())
      .addColumn('requested_scopes', 'text', (c) => c.notNull())
      /** pending | approved | denied | consumed */
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('account_id', 'text', (c) => c.references('accounts.id').onDelete('cascade'))
      .addColumn('livemode', 'integer')
      .addColumn('user_id', 'text')
      .addColumn('scopes', 'text')
      .addColumn('interval_seconds', 'integer', (c) => c.notNull())
      .addColumn('last_polled_ms', 'bigint')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('expires_at', 'text', (c) => c.notNull())
      .execute();
  },
  async down(db: Kysely<unknown>) {
    for (const table of [
      'device_authorizations',
      'oauth_refresh_tokens',
      'oauth_codes',
      'oauth_clients',
      'billing_sessions',
      'account_billing',
    ]) {
      await db.schema.dropTable(table).execute();
    }
    await db.schema.alterTable('api_keys').dropColumn('expires_at').execute();
  },
};
