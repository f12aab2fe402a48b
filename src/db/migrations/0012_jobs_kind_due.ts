import type { Kysely, Migration } from 'kysely';

/**
 * The worker claims each kind's due jobs separately (every kind has its own slots), oldest first:
 * with (kind, due_at, id) that pick is a range read of the index, however many jobs of other kinds
 * are due.
 */
export const jobsKindDue: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema.createIndex('jobs_kind_due_id').on('jobs').columns(['kind', 'due_at', 'id']).execute();
  },
  async down(db: Kysely<unknown>) {
    await db.schema.dropIndex('jobs_kind_due_id').execute();
  },
};
