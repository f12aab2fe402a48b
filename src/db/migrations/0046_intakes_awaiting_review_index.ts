import { sql, type Kysely, type Migration } from 'kysely';

/**
 * The intakes with answers awaiting review, in the order the lists show them: a partial index of the
 * rows whose kept count (migration 0044) is above zero. The dashboard's list, which shows them first,
 * and `GET /v1/intakes?awaiting_review=true` walk it for a page and count it for their totals: a cost
 * that grows with the intakes awaiting review, not with the account's intakes. A planner uses such an
 * index only for a query that states its condition as written here (`awaiting_review > 0`, a literal).
 *
 * Building it reads the intakes' table once; on PostgreSQL intake writes wait while it does
 * (docs/deploy.md, "Upgrading without downtime").
 */
export const intakesAwaitingReviewIndex: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createIndex('intakes_awaiting_review_created_id')
      .on('intakes')
      .columns(['account_id', 'livemode', 'created_at', 'id'])
      .where(sql.ref('awaiting_review'), '>', sql.lit(0))
      .execute();
  },
  async down(db: Kysely<unknown>) {
    await db.schema.dropIndex('intakes_awaiting_review_created_id').execute();
  },
};
