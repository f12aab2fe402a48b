import type { Kysely } from 'kysely';

/**
 * Runs a migration's `work` in one transaction: the migrator's own on PostgreSQL (Kysely runs
 * PostgreSQL's migrations in a transaction), a new one on SQLite (whose migrations it does not).
 */
export function inOneTransaction(
  db: Kysely<unknown>,
  work: (trx: Kysely<unknown>) => Promise<void>,
): Promise<void> {
  return db.isTransaction ? work(db) : db.transaction().execute(work);
}
