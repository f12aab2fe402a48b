import type { Kysely, Migration } from 'kysely';

/**
 * `jobs_kind_key_due_id` (kind, concurrency_key, due_at, id): a worker holding its allowance of one
 * key (a webhook endpoint far behind) claims the kind's other keys' oldest due jobs key by key from
 * it, instead of walking past every due job of the keys it holds; and a kind's keys are found with one
 * seek each. It replaces `jobs_due_id` (due_at, id), which only the operator's `jobs list` and
 * `jobs purge` read (the worker's picks read `jobs_kind_due_id`): each job written, claimed or deleted
 * still pays for the same number of indexes.
 */
export const jobsKindKeyDue: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createIndex('jobs_kind_key_due_id')
      .on('jobs')
      .columns(['kind', 'concurrency_key', 'due_at', 'id'])
      .execute();
    await db.schema.dropIndex('jobs_due_id').execute();
  },
  async down(db: Kysely<unknown>) {
    await db.schema.createIndex('jobs_due_id').on('jobs').columns(['due_at', 'id']).execute();
    await db.schema.dropIndex('jobs_kind_key_due_id').execute();
  },
};
