import { PostgresAdapter, sql, type Kysely, type Migration } from 'kysely';
import { ANSWER_TABLES, UNWATCHED_COLUMNS } from './0039_answer_versions.js';
import { SLOTS } from './0041_intake_count_slots.js';

/**
 * The account versions of migration 0039 on PostgreSQL, so that answers are kept there too (read-cache.ts,
 * `Db.readAnswerVersion`): a polled read whose account has committed nothing since costs one read of
 * the account's version instead of every statement of its answer.
 *
 * PostgreSQL has no change version to read for free, so a kept answer is checked against its account's
 * version on every read (read in the key's statement), and the version is read before the answer's rows.
 *
 * As the intakes' counts (migration 0041), a version is spread over slots, one per server process
 * (`pg_backend_pid() % SLOTS`), so that writers of one account do not wait for each other's commit on one
 * row. Every commit that changes an account's rows adds one to one of its slots: the sum over its slots
 * grows with every such commit, so an unchanged sum means no such commit in between.
 *
 * The triggers run once per statement (transition tables), not per row, and write an account's slot
 * once per transaction (bumpAll). An update of `UNWATCHED_COLUMNS` alone moves nothing (a row
 * trigger there, with a condition on the row less those columns).
 *
 * SQLite has its own triggers (0039), untouched.
 */

/**
 * Every table under versions, with the column naming its account: 0039's. The intakes' counts (0040),
 * under versions on SQLite, are left out here: their rows change only with the intakes' rows, in the
 * same statement (whose triggers move the version), and in the slots' fold (slot-fold.ts), which changes
 * no count and, without triggers, takes no version row that a writer of counts may hold.
 */
export const POSTGRES_ANSWER_TABLES: Readonly<Record<string, string>> = ANSWER_TABLES;

const SLOT = sql.raw(`pg_backend_pid() % ${SLOTS}`);

/**
 * One more in this connection's slot for each account `accounts` names (a query of one column), once a
 * transaction: a slot's row already written by this transaction (its `xmin`) has moved its sum, and one
 * move is all a commit needs. A creation's four statements under versions (five with a live key) write it once.
 */
function bumpAll(accounts: string) {
  // In the accounts' order, so that two statements of one slot lock their rows in the same order.
  return sql`insert into answer_versions (account_id, slot, version)
    select distinct account_id, ${SLOT}, 1 from (${sql.raw(accounts)}) as changed_accounts (account_id)
    where account_id is not null
      and not exists (select from answer_versions mine where mine.account_id = changed_accounts.account_id
        and mine.slot = ${SLOT} and mine.xmin = pg_current_xact_id()::xid)
    order by account_id
    on conflict (account_id, slot) do update set version = answer_versions.version + 1;`;
}

const functionName = (table: string, event: string) => sql.raw(`${table}_answers_${event}`);

/** The statement triggers of `table` (and, for unwatched columns, a row trigger for updates). */
async function createTriggers(db: Kysely<unknown>, table: string, column: string): Promise<void> {
  const on = sql.table(table);
  const distinct = (relation: string) => `select distinct ${column} from ${relation}`;
  const bodies: Record<string, string> = {
    insert: distinct('changed'),
    delete: distinct('changed'),
    // A row moved to another account (none does today) changes both accounts' answers.
    update: `${distinct('changed')} union ${distinct('previous')}`,
  };
  const unwatched = UNWATCHED_COLUMNS[table] ?? [];
  for (const [event, accounts] of Object.entries(bodies)) {
    if (event === 'update' && unwatched.length > 0) continue;
    await sql`create function ${functionName(table, event)}() returns trigger language plpgsql as $$
      begin ${bumpAll(accounts)} return null; end $$`.execute(db);
  }
  await sql`create trigger ${functionName(table, 'insert')} after insert on ${on}
    referencing new table as changed for each statement execute function ${functionName(table, 'insert')}()`.execute(
    db,
  );
  await sql`create trigger ${functionName(table, 'delete')} after delete on ${on}
    referencing old table as changed for each statement execute function ${functionName(table, 'delete')}()`.execute(
    db,
  );
  if (unwatched.length === 0) {
    await sql`create trigger ${functionName(table, 'update')} after update on ${on}
      referencing old table as previous new table as changed
      for each statement execute function ${functionName(table, 'update')}()`.execute(db);
    return;
  }
  // Any column but the unwatched ones, compared as whole rows less those columns (so that no column is
  // named, and one added later is watched): a row trigger, the only kind with a condition on its row.
  const less = unwatched.map((name) => ` - '${name}'`).join('');
  await sql`create function ${functionName(table, 'update_row')}() returns trigger language plpgsql as $$
    begin
      ${bumpAll(`values (new.${column}), (old.${column})`)}
      return null;
    end $$`.execute(db);
  await sql`create trigger ${functionName(table, 'update')} after update on ${on} for each row
    when ((to_jsonb(old)${sql.raw(less)}) is distinct from (to_jsonb(new)${sql.raw(less)}))
    execute function ${functionName(table, 'update_row')}()`.execute(db);
}

async function dropTriggers(db: Kysely<unknown>, table: string): Promise<void> {
  for (const event of ['insert', 'update', 'delete']) {
    await sql`drop trigger if exists ${functionName(table, event)} on ${sql.table(table)}`.execute(db);
  }
  for (const event of ['insert', 'update', 'delete', 'update_row']) {
    await sql`drop function if exists ${functionName(table, event)}()`.execute(db);
  }
}

export const answerVersionsPostgres: Migration = {
  async up(db: Kysely<unknown>) {
    if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
    await sql`create table answer_versions (
      account_id text not null, slot integer not null, version bigint not null,
      primary key (account_id, slot))`.execute(db);
    for (const [table, column] of Object.entries(POSTGRES_ANSWER_TABLES))
      await createTriggers(db, table, column);
  },
  async down(db: Kysely<unknown>) {
    if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
    for (const table of Object.keys(POSTGRES_ANSWER_TABLES)) await dropTriggers(db, table);
    await sql`drop table answer_versions`.execute(db);
  },
};
