import type { Kysely, Migration } from 'kysely';

/**
 * Webhook endpoints, one delivery per (event, subscribed endpoint), and the log of every HTTP attempt.
 * Deliveries are created in the transaction that records their event (events.repository.ts), so a
 * committed state change always has its deliveries; the job engine times each attempt.
 */
export const webhooks: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('webhook_endpoints')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('account_id', 'text', (c) => c.notNull())
      .addColumn('livemode', 'integer', (c) => c.notNull())
      .addColumn('url', 'text', (c) => c.notNull())
      .addColumn('events', 'text', (c) => c.notNull())
      .addColumn('format', 'text', (c) => c.notNull())
      .addColumn('secret_ciphertext', 'text', (c) => c.notNull())
      .addColumn('previous_secret_ciphertext', 'text')
      .addColumn('previous_secret_expires_at', 'text')
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('disabled_reason', 'text')
      .addColumn('disabled_at', 'text')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex('webhook_endpoints_account')
      .on('webhook_endpoints')
      .columns(['account_id', 'livemode', 'status', 'created_at'])
      .execute();

    await db.schema
      .createTable('webhook_deliveries')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('account_id', 'text', (c) => c.notNull())
      .addColumn('livemode', 'integer', (c) => c.notNull())
      .addColumn('endpoint_id', 'text', (c) =>
        c.notNull().references('webhook_endpoints.id').onDelete('cascade'),
      )
      .addColumn('event_id', 'text', (c) => c.notNull())
      .addColumn('event_type', 'text', (c) => c.notNull())
      .addColumn('payload', 'text', (c) => c.notNull())
      .addColumn('test', 'integer', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('next_attempt_at', 'text')
      // Which process holds the delivery (queued or in flight) and until when (real epoch ms).
      .addColumn('lease_owner', 'text')
      .addColumn('lease_until', 'bigint')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('completed_at', 'text')
      .execute();
    await db.schema
      .createIndex('webhook_deliveries_endpoint')
      .on('webhook_deliveries')
      .columns(['account_id', 'livemode', 'endpoint_id', 'status'])
      .execute();
    await db.schema
      .createIndex('webhook_deliveries_endpoint_id')
      .on('webhook_deliveries')
      .columns(['endpoint_id'])
      .execute();

    await db.schema
      .createTable('webhook_attempts')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('account_id', 'text', (c) => c.notNull())
      .addColumn('livemode', 'integer', (c) => c.notNull())
      .addColumn('endpoint_id', 'text', (c) =>
        c.notNull().references('webhook_endpoints.id').onDelete('cascade'),
      )
      .addColumn('delivery_id', 'text', (c) =>
        c.notNull().references('webhook_deliveries.id').onDelete('cascade'),
      )
      .addColumn('event_id', 'text', (c) => c.notNull())
      .addColumn('event_type', 'text', (c) => c.notNull())
      .addColumn('attempt', 'integer', (c) => c.notNull())
      .addColumn('requested_at', 'text', (c) => c.notNull())
      .addColumn('duration_ms', 'integer', (c) => c.notNull())
      .addColumn('response_status', 'integer')
      .addColumn('response_excerpt', 'text')
      .addColumn('error', 'text')
      .addColumn('outcome', 'text', (c) => c.notNull())
      .addColumn('next_attempt_at', 'text')
      .execute();
    await db.schema
      .createIndex('webhook_attempts_endpoint')
      .on('webhook_attempts')
      .columns(['account_id', 'livemode', 'endpoint_id', 'requested_at', 'id'])
      .execute();
    await db.schema
      .createIndex('webhook_attempts_delivery')
      .on('webhook_attempts')
      .columns(['delivery_id'])
      .execute();
  },

  async down(db: Kysely<unknown>) {
    for (const table of ['webhook_attempts', 'webhook_deliveries', 'webhook_endpoints']) {
      await db.schema.dropTable(table).execute();
    }
  },
};
