import { PostgresAdapter, sql, type Kysely, type Migration } from 'kysely';
import { inOneTransaction } from './one-transaction.js';

/**
 * The intakes' counts (migration 0040) counted again from the intakes, with the intakes' writers held
 * off until it commits.
 *
 * Migration 0040 counted the intakes and then created the triggers that keep the counts, two steps
 * with nothing holding writers off between them: an intake created, moved or deleted by another process
 * in that moment (a rolling upgrade, the old version still serving) was left out of its count, and the
 * list's total stayed off by it. Here the counts are replaced by a fresh count, in one transaction that
 * first takes the lock the intakes' writers wait for (PostgreSQL: `share row exclusive` on the table,
 * which lets reads through; SQLite: the one write lock, which the deletion takes). Every count then sits
 * in slot 0, as after a fold of the slots. On a large database the intakes' writes wait for one pass
 * over the intakes, once.
 */

const KEY = 'account_id, livemode, status';

export const intakeCountsRecounted: Migration = {
  async up(db: Kysely<unknown>) {
    const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
    await inOneTransaction(db, async (trx) => {
      if (postgres) await sql`lock table intakes in share row exclusive mode`.execute(trx);
      await sql`delete from intake_counts`.execute(trx);
      await sql`insert into intake_counts (${sql.raw(KEY)}, slot, n)
        select ${sql.raw(KEY)}, 0, count(*) from intakes group by ${sql.raw(KEY)}`.execute(trx);
    });
  },
  // Nothing to undo: the counts it wrote are the counts the triggers keep.
  async down() {},
};
