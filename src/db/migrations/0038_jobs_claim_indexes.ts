import { PostgresAdapter, sql, type Kysely, type Migration } from 'kysely';

/**
 * The indexes the worker's claims read hold only jobs that may run again: a job given up on keeps its
 * row for the operator (`jobs list --state failed`, `jobs retry`), with `locked_until` set to
 * 8640000000000000, and kept its place at the front of its kind, where every claim of that kind
 * passed over it until `jobs purge` removed it. Claims name the same condition, word for word, so
 * that both databases use these partial indexes.
 *
 * - `jobs_kind_due_id` (kind, due_at, id): a kind's due jobs, oldest first (as before, less the given
 *   up).
 * - `jobs_queue_due_id` ((kind || '/' || coalesce(concurrency_key, '')), due_at, id): a job's queue,
 *   its kind and concurrency key in one value (`kind/` for a job without a key), then its due time. A
 *   worker holding its allowance of one key (a webhook endpoint far behind) claims the kind's other
 *   keys' oldest due jobs queue by queue from it, one seek each, instead of walking past every due job
 *   of the keys it holds. One value, not two columns: an equality on it bounds the read by the key,
 *   and no condition on `kind` alone invites a planner to read (kind, due_at) instead.
 *
 * They replace `jobs_due_id` (due_at, id), which only the operator's `jobs list` and `jobs purge`
 * read: each job written, claimed or deleted still pays for the same number of indexes.
 */
/** A job not given up on, as the worker's claims state it (`notGivenUp`), written out here. */
const LIVE = sql.raw('(locked_until is null or locked_until < 8640000000000000)');

export const jobsClaimIndexes: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema.dropIndex('jobs_kind_due_id').execute();
    await sql`create index jobs_kind_due_id on jobs (kind, due_at, id) where ${LIVE}`.execute(db);
    // Compared byte by byte on both databases (SQLite's default; "C" on PostgreSQL), so that a kind's
    // queues sort together between `kind/` and `kind0` whatever the database's collation.
    const queue =
      db.getExecutor().adapter instanceof PostgresAdapter
        ? sql`((kind || '/' || coalesce(concurrency_key, '')) collate "C")`
        : sql`(kind || '/' || coalesce(concurrency_key, ''))`;
    await sql`create index jobs_queue_due_id on jobs (${queue}, due_at, id) where ${LIVE}`.execute(db);
    await db.schema.dropIndex('jobs_due_id').execute();
  },
  async down(db: Kysely<unknown>) {
    await db.schema.createIndex('jobs_due_id').on('jobs').columns(['due_at', 'id']).execute();
    await db.schema.dropIndex('jobs_queue_due_id').execute();
    await db.schema.dropIndex('jobs_kind_due_id').execute();
    await db.schema.createIndex('jobs_kind_due_id').on('jobs').columns(['kind', 'due_at', 'id']).execute();
  },
};
