import type { Kysely, Migration } from 'kysely';

/**
 * The idempotency keys by age, for their hourly sweep (purgeExpiredIdempotencyKeys): the expired ones
 * are the index's first entries. Before the sweep the table kept every key of every keyed creation.
 *
 * Building it reads the table once; on PostgreSQL keyed creations wait while it does (docs/deploy.md,
 * "Upgrading without downtime").
 */
export const idempotencyKeysCreated: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createIndex('idempotency_keys_created')
      .on('idempotency_keys')
      .columns(['created_at'])
      .execute();
  },
  async down(db: Kysely<unknown>) {
    await db.schema.dropIndex('idempotency_keys_created').execute();
  },
};
