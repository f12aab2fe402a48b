/**
 * Each item's history: submissions, revision requests and approvals, with who and when (and the
 * reviewer's note). Written in the same transaction as the change it records, under the intake's lock.
 */
import type { Kysely, Selectable } from 'kysely';
import type { Database, ItemHistoryTable } from '../../db/schema.js';
import { newId } from '../../lib/ids.js';
import { preparedQuery } from '../../db/prepared.js';

export type ItemHistoryRow = Selectable<ItemHistoryTable>;

export const ITEM_HISTORY_ACTIONS = ['submitted', 'revision_requested', 'approved'] as const;
export type ItemHistoryAction = (typeof ITEM_HISTORY_ACTIONS)[number];
export const HISTORY_ACTOR_TYPES = ['api_key', 'user', 'client', 'system'] as const;
export type HistoryActorType = (typeof HISTORY_ACTOR_TYPES)[number];

export async function recordItemHistory(
  trx: Kysely<Database>,
  world: {
    accountId: string;
    livemode: boolean;
    clock: { now(): Date };
    actor: { type: string; id: string | null };
  },
  entry: { intakeId: string; itemKey: string; action: ItemHistoryAction; note?: string | null },
): Promise<void> {
  const last = await trx
    .selectFrom('item_history')
    .select((eb) => eb.fn.max<number | null>('seq').as('seq'))
    .where('intake_id', '=', entry.intakeId)
    .executeTakeFirst();
  await trx
    .insertInto('item_history')
    .values({
      id: newId('ihe'),
      account_id: world.accountId,
      livemode: world.livemode ? 1 : 0,
      intake_id: entry.intakeId,
      item_key: entry.itemKey,
      action: entry.action,
      actor_type: world.actor.type,
      actor_id: world.actor.id,
      note: entry.note ?? null,
      occurred_at: world.clock.now().toISOString(),
      seq: Number(last?.seq ?? 0) + 1,
    })
    .execute();
}

const selectHistoryOf = preparedQuery(
  (db: Kysely<Database>, intakeId: string) =>
    db.selectFrom('item_history').selectAll().where('intake_id', '=', intakeId).orderBy('seq'),
  [''],
);

/** Every entry of an intake, oldest first, grouped by item key. */
export async function historyOf(
  db: Kysely<Database>,
  intakeId: string,
): Promise<Map<string, ItemHistoryRow[]>> {
  const rows = await selectHistoryOf(db, intakeId);
  const byKey = new Map<string, ItemHistoryRow[]>();
  for (const row of rows) byKey.set(row.item_key, [...(byKey.get(row.item_key) ?? []), row]);
  return byKey;
}

export async function deleteHistoryOf(db: Kysely<Database>, intakeId: string): Promise<void> {
  await db.deleteFrom('item_history').where('intake_id', '=', intakeId).execute();
}
