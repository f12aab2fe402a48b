import { PostgresAdapter, sql, type Kysely, type Migration } from 'kysely';
import { createCountFunctions } from './0040_intake_counts.js';

/**
 * The intakes' counts (migration 0040) spread over slots on PostgreSQL, so that writers do not wait for
 * each other's commit.
 *
 * With one row per account, mode and status, every transaction that created, deleted or moved an intake
 * of an account updated the same row and held its lock until it committed: concurrent creations of one
 * account ran one after another from that statement on (with three API processes creating for one
 * account, the slowest creations took three to five times as long). Now each connection writes to the
 * row of its own slot (its server process's id, modulo `SLOTS`), so two transactions wait for each
 * other only when their connections share a slot. A count is the sum over its slots, which the list
 * reads already (`sum(n)`); a slot alone may fall below zero (an intake created through one connection
 * and deleted through another), the sum does not.
 *
 * SQLite has one writer at a time: every count stays in slot 0 there, and its triggers are unchanged.
 */

/** Slots per account, mode and status: a count is read as the sum of at most this many rows. */
export const SLOTS = 32;

const KEY = 'account_id, livemode, status';

/** The functions of migration 0040's triggers, each writing to the connection's own slot. */
async function createSlottedCountFunctions(db: Kysely<unknown>): Promise<void> {
  const slot = sql.raw(`pg_backend_pid() % ${SLOTS}`);
  const onConflict = sql.raw(`on conflict (${KEY}, slot) do update set n = intake_counts.n + excluded.n`);
  await sql`create or replace function intake_counts_add() returns trigger language plpgsql as $$
    begin
      insert into intake_counts (${sql.raw(KEY)}, slot, n)
        select ${sql.raw(KEY)}, ${slot}, count(*) from added group by ${sql.raw(KEY)}
        ${onConflict};
      return null;
    end $$`.execute(db);
  await sql`create or replace function intake_counts_remove() returns trigger language plpgsql as $$
    begin
      insert into intake_counts (${sql.raw(KEY)}, slot, n)
        select ${sql.raw(KEY)}, ${slot}, -count(*) from removed group by ${sql.raw(KEY)}
        ${onConflict};
      return null;
    end $$`.execute(db);
  await sql`create or replace function intake_counts_move() returns trigger language plpgsql as $$
    begin
      insert into intake_counts (${sql.raw(KEY)}, slot, n)
        values (old.account_id, old.livemode, old.status, ${slot}, -1)
        ${onConflict};
      insert into intake_counts (${sql.raw(KEY)}, slot, n)
        values (new.account_id, new.livemode, new.status, ${slot}, 1)
        ${onConflict};
      return null;
    end $$`.execute(db);
}

export const intakeCountSlots: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .alterTable('intake_counts')
      .addColumn('slot', 'integer', (c) => c.notNull().defaultTo(0))
      .execute();
    if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
    await sql`alter table intake_counts drop constraint intake_counts_pkey,
      add constraint intake_counts_pkey primary key (${sql.raw(KEY)}, slot)`.execute(db);
    await createSlottedCountFunctions(db);
  },
  async down(db: Kysely<unknown>) {
    const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
    if (postgres) {
      // Counted again from the intakes into one row per account, mode and status, as 0040 left them.
      await sql`delete from intake_counts`.execute(db);
      await sql`alter table intake_counts drop constraint intake_counts_pkey,
        add constraint intake_counts_pkey primary key (${sql.raw(KEY)})`.execute(db);
    }
    await db.schema.alterTable('intake_counts').dropColumn('slot').execute();
    if (postgres) {
      await sql`insert into intake_counts (${sql.raw(KEY)}, n)
        select ${sql.raw(KEY)}, count(*) from intakes group by ${sql.raw(KEY)}`.execute(db);
      await createCountFunctions(db, true);
    }
  },
};
