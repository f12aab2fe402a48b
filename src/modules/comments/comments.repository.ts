import type { Insertable, Kysely, Selectable } from 'kysely';
import type { Database, ItemCommentsTable } from '../../db/schema.js';
import type { World } from '../../kernel/world.js';

export type CommentRow = Selectable<ItemCommentsTable>;

/** An intake as its comments are found: their index starts with its account and mode, then the intake. */
export interface CommentedIntake {
  id: string;
  account_id: string;
  livemode: number;
}

/** The intake's comments: a range of their index (account, mode, intake), never a walk of the whole. */
function commentsOfIntake(db: Kysely<Database>, intake: CommentedIntake) {
  return db
    .selectFrom('item_comments')
    .where('account_id', '=', intake.account_id)
    .where('livemode', '=', intake.livemode)
    .where('intake_id', '=', intake.id);
}

export async function insertComment(db: Kysely<Database>, row: Insertable<ItemCommentsTable>): Promise<void> {
  await db.insertInto('item_comments').values(row).execute();
}

/** The next position in the intake's conversation (the caller holds the intake's lock). */
export async function nextSeq(db: Kysely<Database>, intake: CommentedIntake): Promise<number> {
  const row = await commentsOfIntake(db, intake)
    .select((eb) => eb.fn.max('seq').as('last'))
    .executeTakeFirst();
  return Number(row?.last ?? 0) + 1;
}

export async function findComment(
  db: Kysely<Database>,
  intake: CommentedIntake,
  id: string,
): Promise<CommentRow | undefined> {
  return commentsOfIntake(db, intake).selectAll().where('id', '=', id).executeTakeFirst();
}

/** One page of an intake's comments, oldest first, after position `afterSeq`. */
export async function commentsOf(
  db: Kysely<Database>,
  tenant: { accountId: string; livemode: boolean },
  intakeId: string,
  options: { afterSeq?: number; limit?: number; itemKey?: string | undefined } = {},
): Promise<CommentRow[]> {
  let query = db
    .selectFrom('item_comments')
    .selectAll()
    .where('account_id', '=', tenant.accountId)
    .where('livemode', '=', tenant.livemode ? 1 : 0)
    .where('intake_id', '=', intakeId)
    .where('seq', '>', options.afterSeq ?? 0);
  if (options.itemKey !== undefined) query = query.where('item_key', '=', options.itemKey);
  query = query.orderBy('seq');
  if (options.limit !== undefined) query = query.limit(options.limit);
  return query.execute();
}

/** The owner's comments the client has not been emailed about yet, oldest first. */
export async function waitingOwnerComments(
  db: Kysely<Database>,
  intake: CommentedIntake,
): Promise<CommentRow[]> {
  return commentsOfIntake(db, intake)
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
export async function deleteCommentsOf(db: Kysely<Database>, world: World, intakeId: string): Promise<void> {
  await db
    .deleteFrom('item_comments')
    .where('account_id', '=', world.accountId)
    .where('livemode', '=', world.livemode ? 1 : 0)
    .where('intake_id', '=', intakeId)
    .execute();
}
