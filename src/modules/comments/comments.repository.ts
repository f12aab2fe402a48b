import type { Insertable, Kysely, Selectable } from 'kysely';
import type { Database, ItemCommentsTable } from '../../db/schema.js';

export type CommentRow = Selectable<ItemCommentsTable>;

/** The account and mode an intake's comments are of (a World is one). */
interface Tenant {
  accountId: string;
  livemode: boolean;
}

/** The intake's comments: a range of their index (account, mode, intake), never a walk of the whole. */
function commentsOfIntake(db: Kysely<Database>, tenant: Tenant, intakeId: string) {
  return db
    .selectFrom('item_comments')
    .where('account_id', '=', tenant.accountId)
    .where('livemode', '=', tenant.livemode ? 1 : 0)
    .where('intake_id', '=', intakeId);
}

export async function insertComment(db: Kysely<Database>, row: Insertable<ItemCommentsTable>): Promise<void> {
  await db.insertInto('item_comments').values(row).execute();
}

/** The next position in the intake's conversation (the caller holds the intake's lock). */
export async function nextSeq(db: Kysely<Database>, tenant: Tenant, intakeId: string): Promise<number> {
  const row = await commentsOfIntake(db, tenant, intakeId)
    .select((eb) => eb.fn.max('seq').as('last'))
    .executeTakeFirst();
  return Number(row?.last ?? 0) + 1;
}

export async function findComment(
  db: Kysely<Database>,
  tenant: Tenant,
  intakeId: string,
  id: string,
): Promise<CommentRow | undefined> {
  return commentsOfIntake(db, tenant, intakeId).selectAll().where('id', '=', id).executeTakeFirst();
}

/** One page of an intake's comments, oldest first, after position `afterSeq`. */
export async function commentsOf(
  db: Kysely<Database>,
  tenant: Tenant,
  intakeId: string,
  options: { afterSeq?: number; limit?: number; itemKey?: string | undefined } = {},
): Promise<CommentRow[]> {
  let query = commentsOfIntake(db, tenant, intakeId)
    .selectAll()
    .where('seq', '>', options.afterSeq ?? 0);
  if (options.itemKey !== undefined) query = query.where('item_key', '=', options.itemKey);
  query = query.orderBy('seq');
  if (options.limit !== undefined) query = query.limit(options.limit);
  return query.execute();
}

/** The owner's comments the client has not been emailed about yet, oldest first. */
export async function waitingOwnerComments(
  db: Kysely<Database>,
  tenant: Tenant,
  intakeId: string,
): Promise<CommentRow[]> {
  return commentsOfIntake(db, tenant, intakeId)
    .selectAll()
    .where('author', '=', 'owner')
    .where('emailed_at', 'is', null)
    .orderBy('seq')
    .execute();
}

export async function markEmailed(db: Kysely<Database>, ids: readonly string[], at: string): Promise<void> {
  if (ids.length === 0) return;
  await db.updateTable('item_comments').set({ emailed_at: at }).where('id', 'in', ids).execute();
}

/** The intake's comments: a range of their index, which starts with the account and mode. */
export async function deleteCommentsOf(
  db: Kysely<Database>,
  tenant: Tenant,
  intakeId: string,
): Promise<void> {
  await db
    .deleteFrom('item_comments')
    .where('account_id', '=', tenant.accountId)
    .where('livemode', '=', tenant.livemode ? 1 : 0)
    .where('intake_id', '=', intakeId)
    .execute();
}
