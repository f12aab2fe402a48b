import { sql, type Kysely, type Migration } from 'kysely';
import { newId } from '../../lib/ids.js';

/**
 * The dashboard's people: account users (the account's email is its first user), one-time sign-in
 * links and browser sessions. Links and sessions are stored as SHA-256 hashes only: a database leak
 * gives no way to sign in.
 */
export const dashboard: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('account_users')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
      .addColumn('email', 'text', (c) => c.notNull().unique())
      .addColumn('role', 'text', (c) => c.notNull())
      .addColumn('invited_by_user_id', 'text')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('last_signed_in_at', 'text')
      .execute();
    await db.schema.createIndex('account_users_account').on('account_users').column('account_id').execute();

    await db.schema
      .createTable('sign_in_tokens')
      .addColumn('token_hash', 'text', (c) => c.primaryKey())
      .addColumn('user_id', 'text', (c) => c.notNull().references('account_users.id').onDelete('cascade'))
      .addColumn('return_to', 'text')
      .addColumn('expires_at', 'text', (c) => c.notNull())
      .addColumn('used_at', 'text')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .execute();

    await db.schema
      .createTable('user_sessions')
      .addColumn('id_hash', 'text', (c) => c.primaryKey())
      .addColumn('user_id', 'text', (c) => c.notNull().references('account_users.id').onDelete('cascade'))
      .addColumn('account_id', 'text', (c) => c.notNull())
      .addColumn('livemode', 'integer', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('expires_at', 'text', (c) => c.notNull())
      .addColumn('last_seen_at', 'text', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('user_sessions_user').on('user_sessions').column('user_id').execute();
    // Expired links and sessions are swept at each sign-in.
    await db.schema.createIndex('user_sessions_expiry').on('user_sessions').column('expires_at').execute();
    await db.schema.createIndex('sign_in_tokens_expiry').on('sign_in_tokens').column('expires_at').execute();

    // Accounts created before this migration get their first user: the account's own email.
    const accounts = await sql<{ id: string; email: string; created_at: string }>`
      select id, email, created_at from accounts`.execute(db);
    for (const account of accounts.rows) {
      await sql`insert into account_users (id, account_id, email, role, created_at)
        values (${newId('usr')}, ${account.id}, ${account.email.toLowerCase()}, 'owner', ${account.created_at})`.execute(
        db,
      );
    }
  },
  async down(db: Kysely<unknown>) {
    for (const table of ['user_sessions', 'sign_in_tokens', 'account_users']) {
      await db.schema.dropTable(table).execute();
    }
  },
};
