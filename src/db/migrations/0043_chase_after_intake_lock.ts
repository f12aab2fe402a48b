import { PostgresAdapter, sql, type Kysely, type Migration } from 'kysely';

/**
 * PostgreSQL only: a reminder's chase, read once its intake's lock is free, in one statement.
 *
 * A reminder's dispatch waits for any transaction that holds its intake's lock (a call-off, a deletion,
 * another worker's cut-off record) and reads the chase after that transaction has committed, so that it
 * sees what the transaction did. Two statements in a row cost two round trips; one statement cannot do
 * it, since a statement reads every table as of its start. A function can: a volatile PL/pgSQL
 * function takes a fresh snapshot for each statement it runs (read committed), so its second
 * statement, run after the first has waited, sees what committed meanwhile.
 *
 * The share lock is taken with synchronous_commit off for its transaction (as the two statements did):
 * a row lock gives the statement's transaction an id, whose commit would otherwise wait for the log's
 * flush although it wrote nothing worth keeping.
 */
export const chaseAfterIntakeLock: Migration = {
  async up(db: Kysely<unknown>) {
    if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
    await sql`create function chase_after_intake_lock(wanted_intake text, wanted_chase text)
      returns setof chases language plpgsql volatile as $$
      begin
        perform set_config('synchronous_commit', 'off', true) from intakes where id = wanted_intake for share;
        return query select * from chases where id = wanted_chase;
      end $$`.execute(db);
  },
  async down(db: Kysely<unknown>) {
    if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
    await sql`drop function if exists chase_after_intake_lock(text, text)`.execute(db);
  },
};
