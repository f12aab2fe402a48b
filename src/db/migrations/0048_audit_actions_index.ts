import type { Kysely, Migration } from 'kysely';

/**
 * An account's audit actions in order, for the audit log's filter of them (distinctAuditActions): read
 * one action at a time, each a seek past the last, instead of every entry the account has written.
 *
 * Building it reads the audit log once; on PostgreSQL audited writes wait while it does
 * (docs/deploy.md, "Upgrading without downtime").
 */
export const auditActionsIndex: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createIndex('audit_entries_account_action')
      .on('audit_entries')
      .columns(['account_id', 'livemode', 'action'])
      .execute();
  },
  async down(db: Kysely<unknown>) {
    await db.schema.dropIndex('audit_entries_account_action').execute();
  },
};
