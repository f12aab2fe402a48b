import type { Kysely, Migration } from 'kysely';

/**
 * Operations:
 * - `jobs.trace_context`: the W3C trace context (traceparent) of the request that enqueued the job, so
 *   the job's span joins the request's trace; null when tracing is off.
 * - Retention sweeps of webhook logs by age, across accounts: indexes on the attempt's time and on a
 *   delivery's end.
 */
export const operations: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema.alterTable('jobs').addColumn('trace_context', 'text').execute();
    await db.schema
      .createIndex('webhook_attempts_requested_at')
      .on('webhook_attempts')
      .columns(['requested_at'])
      .execute();
    await db.schema
      .createIndex('webhook_deliveries_completed_at')
      .on('webhook_deliveries')
      .columns(['completed_at'])
      .execute();
  },
  async down(db: Kysely<unknown>) {
    await db.schema.dropIndex('webhook_deliveries_completed_at').execute();
    await db.schema.dropIndex('webhook_attempts_requested_at').execute();
    await db.schema.alterTable('jobs').dropColumn('trace_context').execute();
  },
};
