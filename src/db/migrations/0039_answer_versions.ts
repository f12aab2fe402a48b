import { PostgresAdapter, sql, type Kysely, type Migration } from 'kysely';

/**
 * SQLite only: a number per account that moves with every commit that changes a row of that account
 * in a table the kept answers may read (`Db.answerVersion`). Answers kept between commits
 * (read-cache.ts) were dropped by any commit at all; an account's answer now outlives commits that
 * touch nothing of it: another account's writes, and this account's jobs, deliveries and logs.
 *
 * Triggers keep the numbers, so a change made by any process, or by hand, moves them in the same
 * transaction as the rows. Every table that holds an account's rows has them, but for the tables in
 * `ANSWER_BLIND_TABLES`, which no kept answer reads and the worker writes all the time; a test holds
 * the kept reads to that (test/answer-versions.test.ts), and holds every new table to a choice.
 *
 * PostgreSQL keeps no answers (it has no change version), so it has none of this.
 */

/** Tables whose rows no kept answer reads: their commits leave the accounts' answers as they were. */
export const ANSWER_BLIND_TABLES: readonly string[] = [
  'audit_entries',
  'billing_sessions',
  'device_authorizations',
  'events',
  'idempotency_keys',
  'jobs',
  'messages',
  'oauth_codes',
  'oauth_refresh_tokens',
  'owner_notices',
  'upload_reservations',
  'user_sessions',
  'webhook_attempts',
  'webhook_deliveries',
];

/** The tables with answer-version triggers, each with the column that names the account. */
export const ANSWER_TABLES: Readonly<Record<string, string>> = {
  account_billing: 'account_id',
  account_branding: 'account_id',
  account_users: 'account_id',
  accounts: 'id',
  api_keys: 'account_id',
  chase_plans: 'account_id',
  chases: 'account_id',
  folders: 'account_id',
  intake_items: 'account_id',
  intake_recipients: 'account_id',
  intakes: 'account_id',
  item_comments: 'account_id',
  item_files: 'account_id',
  item_history: 'account_id',
  notice_settings: 'account_id',
  suppressions: 'account_id',
  templates: 'account_id',
  usage_counters: 'account_id',
  webhook_endpoints: 'account_id',
};

/**
 * Columns whose updates change no answer: when a key was last used (written once a minute per key in
 * use; no kept answer shows it). An update of these alone leaves the account's version as it was.
 */
export const UNWATCHED_COLUMNS: Readonly<Record<string, readonly string[]>> = {
  api_keys: ['last_used_at'],
};

/** One more for the account in `column` of `row` (new or old), when the row names one. */
function bump(row: 'new' | 'old', column: string, onlyIfMoved = false) {
  const moved = onlyIfMoved ? sql.raw(` and old.${column} is not new.${column}`) : sql.raw('');
  return sql`insert into answer_versions (account_id, version)
    select ${sql.raw(`${row}.${column}`)}, 1 where ${sql.raw(`${row}.${column}`)} is not null${moved}
    on conflict (account_id) do update set version = version + 1;`;
}

/**
 * The insert, update and delete triggers that move the account's version in `column` on every change
 * of a row of `table` (for an update, of any column but the table's unwatched ones).
 */
export async function createAnswerTriggers(
  db: Kysely<unknown>,
  table: string,
  column: string,
): Promise<void> {
  const name = (event: string) => sql.raw(`${table}_answers_${event}`);
  const on = sql.table(table);
  await sql`create trigger ${name('insert')} after insert on ${on} begin ${bump('new', column)} end`.execute(
    db,
  );
  // An update of any column but the unwatched ones (`update of` names the others).
  const unwatched = UNWATCHED_COLUMNS[table] ?? [];
  const { rows } = await sql<{ name: string }>`select name from pragma_table_info(${table})`.execute(db);
  const watched = rows.map((row) => row.name).filter((name) => !unwatched.includes(name));
  const of = sql.raw(unwatched.length === 0 ? '' : ` of ${watched.join(', ')}`);
  // A row moved to another account (none does today) changes both accounts' answers.
  await sql`create trigger ${name('update')} after update${of} on ${on} begin ${bump('new', column)} ${bump('old', column, true)} end`.execute(
    db,
  );
  await sql`create trigger ${name('delete')} after delete on ${on} begin ${bump('old', column)} end`.execute(
    db,
  );
}

export async function dropAnswerTriggers(db: Kysely<unknown>, table: string): Promise<void> {
  for (const event of ['insert', 'update', 'delete']) {
    await sql`drop trigger if exists ${sql.raw(`${table}_answers_${event}`)}`.execute(db);
  }
}

export const answerVersions: Migration = {
  async up(db: Kysely<unknown>) {
    if (db.getExecutor().adapter instanceof PostgresAdapter) return;
    await sql`create table answer_versions (account_id text primary key not null, version integer not null)`.execute(
      db,
    );
    for (const [table, column] of Object.entries(ANSWER_TABLES))
      await createAnswerTriggers(db, table, column);
  },
  async down(db: Kysely<unknown>) {
    if (db.getExecutor().adapter instanceof PostgresAdapter) return;
    for (const table of Object.keys(ANSWER_TABLES)) await dropAnswerTriggers(db, table);
    await sql`drop table answer_versions`.execute(db);
  },
};
