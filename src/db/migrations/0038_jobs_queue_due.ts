import { sql, type Kysely, type Migration } from 'kysely';

/**
 * `jobs_queue_due_id` ((kind || '/' || coalesce(concurrency_key, '')), due_at, id): a job's queue,
 * its kind and concurrency key in one value (`kind/` for a job without a key), then its due time.
 * A worker holding its allowance of one key (a webhook endpoint far behind) claims the kind's other
 * keys' oldest due jobs queue by queue from it, one seek each, instead of walking past every due job
 * of the keys it holds. One value, not two columns: an equality on it bounds the read by the key, and
 * no condition on `kind` alone invites a planner to read (kind, due_at) instead.
 *
 * It replaces `jobs_due_id` (due_at, id), which only the operator's `jobs list` and `jobs purge`
 * read (the worker's picks read `jobs_kind_due_id`): each job written, claimed or deleted still pays
 * for the same number of indexes.
 */
export const jobsQueueDue: Migration = {
  async up(db: Kysely<unknown>) {
    await sql`create index jobs_queue_due_id on jobs ((kind || '/' || coalesce(concurrency_key, '')), due_at, id)`.execute(
      db,
    );
    await db.schema.dropIndex('jobs_due_id').execute();
  },
  async down(db: Kysely<unknown>) {
    await db.schema.createIndex('jobs_due_id').on('jobs').columns(['due_at', 'id']).execute();
    await db.schema.dropIndex('jobs_queue_due_id').execute();
  },
};
