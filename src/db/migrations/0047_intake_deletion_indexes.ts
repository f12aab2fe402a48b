import { PostgresAdapter, sql, type Kysely, type Migration } from 'kysely';

/**
 * The rows an intake leaves elsewhere, found by the intake: its events (the dashboard's intake page
 * reads them newest first; a deletion deletes them), the idempotency keys that name it and, on
 * PostgreSQL, its pending jobs (a deletion deletes both). Without these indexes each deletion read the
 * three tables whole, and the intake's page walked its account's events, at costs that grew with every
 * intake ever made.
 *
 * Jobs about an intake have subjects `<id>` and `<id>/…`, found as a range of subjects in byte order
 * (cancelJobsUnder). SQLite's index of subjects is in byte order already; PostgreSQL's follows the
 * database's collation, which need not be, so it gets one under `collate "C"`.
 *
 * Building them reads the three tables once; on PostgreSQL their writers wait while it does
 * (docs/deploy.md, "Upgrading without downtime").
 */
export const intakeDeletionIndexes: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createIndex('events_intake')
      .on('events')
      .columns(['intake_id', 'occurred_at', 'id'])
      .execute();
    await db.schema
      .createIndex('idempotency_keys_resource')
      .on('idempotency_keys')
      .columns(['resource_id'])
      .execute();
    if (db.getExecutor().adapter instanceof PostgresAdapter) {
      await db.schema
        .createIndex('jobs_subject_bytes')
        .on('jobs')
        .expression(sql`subject_id collate "C"`)
        .execute();
    }
  },
  async down(db: Kysely<unknown>) {
    if (db.getExecutor().adapter instanceof PostgresAdapter) {
      await db.schema.dropIndex('jobs_subject_bytes').execute();
    }
    await db.schema.dropIndex('idempotency_keys_resource').execute();
    await db.schema.dropIndex('events_intake').execute();
  },
};
