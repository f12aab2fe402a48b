import { PostgresAdapter, sql, type Kysely, type Migration } from 'kysely';
import { inOneTransaction } from './one-transaction.js';

/**
 * Each intake's count of items awaiting review (submitted, not yet approved or sent back), kept on the
 * intake's row: a list page reads it with the row instead of counting each intake's items (on SQLite a
 * correlated count per row was a quarter of a page's statement).
 *
 * Triggers on `intake_items` keep it in the same transaction as the items, whoever writes: one more when
 * an item becomes submitted (inserted so, or its status changed to it), one less when it stops being
 * submitted (its status changed, or the item deleted). Each trigger is guarded by its row's status, so
 * the writes that do not touch a submitted item (a creation's items, a draft's answers) run nothing
 * more. On PostgreSQL the triggers run by row too: an intake's items are
 * written a few at a time, after the intake's row lock, which the update of its count then holds
 * already. The items that exist when the migration runs are counted once here, in the transaction that
 * creates the triggers, with the items' writers held off until it commits (on PostgreSQL a lock on the
 * table; on SQLite the one write lock): an item submitted by another process meanwhile is neither
 * missed nor counted twice.
 */

const SUBMITTED = sql.lit('submitted');

async function createSqliteTriggers(db: Kysely<unknown>): Promise<void> {
  await sql`create trigger intake_awaiting_insert after insert on intake_items
    when new.status = ${SUBMITTED}
    begin update intakes set awaiting_review = awaiting_review + 1 where id = new.intake_id; end`.execute(db);
  await sql`create trigger intake_awaiting_delete after delete on intake_items
    when old.status = ${SUBMITTED}
    begin update intakes set awaiting_review = awaiting_review - 1 where id = old.intake_id; end`.execute(db);
  await sql`create trigger intake_awaiting_update after update of status, intake_id on intake_items
    when (old.status = ${SUBMITTED} or new.status = ${SUBMITTED})
      and (old.status is not new.status or old.intake_id is not new.intake_id)
    begin
      update intakes set awaiting_review = awaiting_review - 1 where id = old.intake_id and old.status = ${SUBMITTED};
      update intakes set awaiting_review = awaiting_review + 1 where id = new.intake_id and new.status = ${SUBMITTED};
    end`.execute(db);
}

async function createPostgresTriggers(db: Kysely<unknown>): Promise<void> {
  await sql`create function intake_awaiting_add() returns trigger language plpgsql as $$
    begin
      update intakes set awaiting_review = awaiting_review + 1 where id = new.intake_id;
      return null;
    end $$`.execute(db);
  await sql`create function intake_awaiting_remove() returns trigger language plpgsql as $$
    begin
      update intakes set awaiting_review = awaiting_review - 1 where id = old.intake_id;
      return null;
    end $$`.execute(db);
  await sql`create function intake_awaiting_move() returns trigger language plpgsql as $$
    begin
      if old.status = ${SUBMITTED} then
        update intakes set awaiting_review = awaiting_review - 1 where id = old.intake_id;
      end if;
      if new.status = ${SUBMITTED} then
        update intakes set awaiting_review = awaiting_review + 1 where id = new.intake_id;
      end if;
      return null;
    end $$`.execute(db);
  await sql`create trigger intake_awaiting_insert after insert on intake_items
    for each row when (new.status = ${SUBMITTED}) execute function intake_awaiting_add()`.execute(db);
  await sql`create trigger intake_awaiting_delete after delete on intake_items
    for each row when (old.status = ${SUBMITTED}) execute function intake_awaiting_remove()`.execute(db);
  await sql`create trigger intake_awaiting_update after update of status, intake_id on intake_items
    for each row when ((old.status = ${SUBMITTED} or new.status = ${SUBMITTED})
      and (old.status, old.intake_id) is distinct from (new.status, new.intake_id))
    execute function intake_awaiting_move()`.execute(db);
}

export const intakeAwaitingReview: Migration = {
  async up(db: Kysely<unknown>) {
    const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
    await inOneTransaction(db, async (trx) => {
      await trx.schema
        .alterTable('intakes')
        .addColumn('awaiting_review', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
      // Item writes wait from here until the triggers are in place: on PostgreSQL for this lock, on
      // SQLite for the write lock the column's addition took.
      if (postgres) await sql`lock table intake_items in share row exclusive mode`.execute(trx);
      await sql`update intakes set awaiting_review = (
          select count(*) from intake_items
          where intake_items.intake_id = intakes.id and intake_items.status = ${SUBMITTED})
        where id in (select intake_id from intake_items where status = ${SUBMITTED})`.execute(trx);
      if (postgres) await createPostgresTriggers(trx);
      else await createSqliteTriggers(trx);
    });
  },
  async down(db: Kysely<unknown>) {
    const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
    for (const event of ['insert', 'delete', 'update']) {
      const trigger = sql.raw(`intake_awaiting_${event}`);
      if (postgres) await sql`drop trigger if exists ${trigger} on intake_items`.execute(db);
      else await sql`drop trigger if exists ${trigger}`.execute(db);
    }
    if (postgres)
      for (const fn of ['add', 'remove', 'move'])
        await sql`drop function if exists ${sql.raw(`intake_awaiting_${fn}`)}()`.execute(db);
    await db.schema.alterTable('intakes').dropColumn('awaiting_review').execute();
  },
};
