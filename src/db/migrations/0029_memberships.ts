import { PostgresAdapter, sql, type Kysely, type Migration } from 'kysely';

/**
 * One person, several accounts: an address is unique per account (account_id, email), no longer
 * across all accounts, so the same person can be a member of several accounts and switch between
 * them. `last_used_at` says which of their accounts they used last: a sign-in link lands there.
 *
 * PostgreSQL swaps the constraint. SQLite cannot drop an inline UNIQUE, so the table is rebuilt
 * (SQLite's documented procedure: foreign keys off, copy, drop, rename, check, foreign keys on).
 * Sign-in links and sessions keep pointing at the same ids, so everyone stays signed in.
 */
const COLUMNS = `id, account_id, email, role, invited_by_user_id, created_at, last_signed_in_at, name, status`;

async function rebuildSqlite(db: Kysely<unknown>, unique: 'per_account' | 'global'): Promise<void> {
  const withLastUsed = unique === 'per_account';
  // Outside any transaction: SQLite ignores this pragma inside one (migrations on SQLite run without).
  await sql`pragma foreign_keys = off`.execute(db);
  try {
    await db.transaction().execute(async (trx) => {
      await sql`drop table if exists account_users_rebuilt`.execute(trx);
      await sql
        .raw(
          `create table account_users_rebuilt (
            id text primary key,
            account_id text not null references accounts (id) on delete cascade,
            email text not null${withLastUsed ? '' : ' unique'},
            role text not null,
            invited_by_user_id text,
            created_at text not null,
            last_signed_in_at text,
            name text,
            status text not null default 'active'${withLastUsed ? ',\n            last_used_at text,\n            unique (account_id, email)' : ''}
          )`,
        )
        .execute(trx);
      await sql
        .raw(
          `insert into account_users_rebuilt (${COLUMNS}${withLastUsed ? ', last_used_at' : ''})
           select ${COLUMNS}${withLastUsed ? ', last_signed_in_at' : ''} from account_users`,
        )
        .execute(trx);
      await sql`drop table account_users`.execute(trx);
      await sql`alter table account_users_rebuilt rename to account_users`.execute(trx);
      await sql`create index account_users_account on account_users (account_id)`.execute(trx);
      if (withLastUsed) await sql`create index account_users_email on account_users (email)`.execute(trx);
      const broken = await sql`pragma foreign_key_check`.execute(trx);
      if (broken.rows.length > 0) throw new Error('account_users rebuild left dangling references');
    });
  } finally {
    await sql`pragma foreign_keys = on`.execute(db);
  }
}

export const memberships: Migration = {
  async up(db: Kysely<unknown>) {
    if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return rebuildSqlite(db, 'per_account');
    await sql`alter table account_users drop constraint if exists account_users_email_key`.execute(db);
    await sql`alter table account_users add constraint account_users_account_email unique (account_id, email)`.execute(
      db,
    );
    await db.schema.createIndex('account_users_email').on('account_users').column('email').execute();
    await db.schema.alterTable('account_users').addColumn('last_used_at', 'text').execute();
    await sql`update account_users set last_used_at = last_signed_in_at`.execute(db);
  },
  /** Back to one account per address: fails while an address belongs to several accounts. */
  async down(db: Kysely<unknown>) {
    if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return rebuildSqlite(db, 'global');
    await db.schema.alterTable('account_users').dropColumn('last_used_at').execute();
    await db.schema.dropIndex('account_users_email').execute();
    await sql`alter table account_users drop constraint account_users_account_email`.execute(db);
    await sql`alter table account_users add constraint account_users_email_key unique (email)`.execute(db);
  },
};
