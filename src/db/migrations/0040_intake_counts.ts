import { PostgresAdapter, sql, type Kysely, type Migration } from 'kysely';
import { createAnswerTriggers, dropAnswerTriggers } from './0039_answer_versions.js';

/**
 * How many intakes each account has, per mode and status: the total of `GET /v1/intakes` (unfiltered,
 * or by status) read from a handful of rows instead of counted over the account's intakes, so a list
 * costs the same at a hundred intakes as at a million.
 *
 * Triggers on `intakes` keep the counts in the same transaction as the rows, whoever writes (the API,
 * the worker, a person by hand): one more on an insert, one less on a delete, and one moved on an update
 * that changes the intake's account, mode or status. The writer never reads a count back, so a creation
 * costs no round trip more. SQLite's triggers run by row; PostgreSQL's inserts and deletes by statement
 * (below). The rows that exist when the migration runs are counted once here.
 *
 * On SQLite the counts carry the account versions of migration 0039 too: the list's kept answer reads
 * them.
 */

/** The table of counts, with the column that names its account, under the account versions (SQLite). */
export const COUNT_ANSWER_TABLES: Readonly<Record<string, string>> = { intake_counts: 'account_id' };

const KEY = 'account_id, livemode, status';

/** One more intake of the account, mode and status of the `new` or `old` row (SQLite). */
function sqliteAdd(row: 'new' | 'old', delta: 1 | -1) {
  const of = (column: string) => sql.raw(`${row}.${column}`);
  return delta === 1
    ? sql`insert into intake_counts (${sql.raw(KEY)}, n) values (${of('account_id')}, ${of('livemode')}, ${of('status')}, 1)
        on conflict (${sql.raw(KEY)}) do update set n = n + 1;`
    : sql`update intake_counts set n = n - 1
        where account_id = ${of('account_id')} and livemode = ${of('livemode')} and status = ${of('status')};`;
}

/**
 * The PostgreSQL functions of the triggers (below), each count row keyed by account, mode and status.
 * `orReplace`: over the definitions a later migration gave them (its way down).
 */
export async function createCountFunctions(db: Kysely<unknown>, orReplace: boolean): Promise<void> {
  const orReplaceSql = sql.raw(orReplace ? 'or replace' : '');
  await sql`create ${orReplaceSql} function intake_counts_add() returns trigger language plpgsql as $$
    begin
      insert into intake_counts (${sql.raw(KEY)}, n)
        select ${sql.raw(KEY)}, count(*) from added group by ${sql.raw(KEY)}
        on conflict (${sql.raw(KEY)}) do update set n = intake_counts.n + excluded.n;
      return null;
    end $$`.execute(db);
  await sql`create ${orReplaceSql} function intake_counts_remove() returns trigger language plpgsql as $$
    begin
      update intake_counts set n = intake_counts.n - removed_counts.n
        from (select ${sql.raw(KEY)}, count(*) as n from removed group by ${sql.raw(KEY)}) as removed_counts
        where intake_counts.account_id = removed_counts.account_id
          and intake_counts.livemode = removed_counts.livemode
          and intake_counts.status = removed_counts.status;
      return null;
    end $$`.execute(db);
  // An update moves one intake between counts: by row, and only when it changes one of the three.
  await sql`create ${orReplaceSql} function intake_counts_move() returns trigger language plpgsql as $$
    begin
      update intake_counts set n = n - 1
        where account_id = old.account_id and livemode = old.livemode and status = old.status;
      insert into intake_counts (${sql.raw(KEY)}, n) values (new.account_id, new.livemode, new.status, 1)
        on conflict (${sql.raw(KEY)}) do update set n = intake_counts.n + 1;
      return null;
    end $$`.execute(db);
}

export const intakeCounts: Migration = {
  async up(db: Kysely<unknown>) {
    const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
    await db.schema
      .createTable('intake_counts')
      .addColumn('account_id', 'text', (c) => c.notNull())
      .addColumn('livemode', 'integer', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('n', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('intake_counts_pkey', ['account_id', 'livemode', 'status'])
      .execute();
    await sql`insert into intake_counts (${sql.raw(KEY)}, n)
      select ${sql.raw(KEY)}, count(*) from intakes group by ${sql.raw(KEY)}`.execute(db);
    if (postgres) {
      // Inserts and deletes by statement, each count moved once by however many rows the statement
      // wrote: a row's trigger would update the same count row once per row, and PostgreSQL walks
      // every earlier version of a row updated again in the same transaction (a bulk insert of an
      // account's intakes would take time in the square of their number).
      await createCountFunctions(db, false);
      await sql`create trigger intake_counts_insert after insert on intakes
        referencing new table as added for each statement execute function intake_counts_add()`.execute(db);
      await sql`create trigger intake_counts_delete after delete on intakes
        referencing old table as removed for each statement execute function intake_counts_remove()`.execute(
        db,
      );
      await sql`create trigger intake_counts_update after update of ${sql.raw(KEY)} on intakes
        for each row when ((old.account_id, old.livemode, old.status) is distinct from (new.account_id, new.livemode, new.status))
        execute function intake_counts_move()`.execute(db);
      return;
    }
    await sql`create trigger intake_counts_insert after insert on intakes begin ${sqliteAdd('new', 1)} end`.execute(
      db,
    );
    await sql`create trigger intake_counts_delete after delete on intakes begin ${sqliteAdd('old', -1)} end`.execute(
      db,
    );
    await sql`create trigger intake_counts_update after update of ${sql.raw(KEY)} on intakes
      when old.account_id is not new.account_id or old.livemode is not new.livemode or old.status is not new.status
      begin ${sqliteAdd('old', -1)} ${sqliteAdd('new', 1)} end`.execute(db);
    for (const [table, column] of Object.entries(COUNT_ANSWER_TABLES))
      await createAnswerTriggers(db, table, column);
  },
  async down(db: Kysely<unknown>) {
    if (db.getExecutor().adapter instanceof PostgresAdapter) {
      for (const event of ['insert', 'delete', 'update']) {
        await sql`drop trigger if exists ${sql.raw(`intake_counts_${event}`)} on intakes`.execute(db);
      }
      for (const fn of ['add', 'remove', 'move']) {
        await sql`drop function if exists ${sql.raw(`intake_counts_${fn}`)}()`.execute(db);
      }
    } else {
      for (const event of ['insert', 'delete', 'update']) {
        await sql`drop trigger if exists ${sql.raw(`intake_counts_${event}`)}`.execute(db);
      }
      for (const table of Object.keys(COUNT_ANSWER_TABLES)) await dropAnswerTriggers(db, table);
    }
    await db.schema.dropTable('intake_counts').execute();
  },
};
