import type { Insertable, Kysely, Selectable, Updateable } from 'kysely';
import type { Database, IntakeItemsTable, IntakesTable, ItemFilesTable } from '../../db/schema.js';
import type { ItemDefinition } from '../../domain/items.js';
import type { World } from './world.js';

export type IntakeRow = Selectable<IntakesTable>;
export type ItemRow = Selectable<IntakeItemsTable>;
export type FileRow = Selectable<ItemFilesTable>;

/** SPEC shows intake ids as in_ (REST) and int_ (webhooks): both reach the same intake. */
export function canonicalIntakeId(id: string): string {
  return id.startsWith('int_') ? `in_${id.slice(4)}` : id;
}

export function definitionOf(row: ItemRow): ItemDefinition {
  return JSON.parse(row.definition) as ItemDefinition;
}

export async function insertIntake(db: Kysely<Database>, row: Insertable<IntakesTable>): Promise<void> {
  await db.insertInto('intakes').values(row).execute();
}

/** New pending items of an intake, positioned from `firstPosition`. */
export function itemRows(
  world: Pick<World, 'accountId' | 'livemode'>,
  intakeId: string,
  items: readonly ItemDefinition[],
  firstPosition: number,
  at: string,
) {
  return items.map((def, index) => ({
    intake_id: intakeId,
    account_id: world.accountId,
    livemode: world.livemode ? 1 : 0,
    key: def.key,
    position: firstPosition + index,
    definition: JSON.stringify(def),
    status: 'pending',
    value_json: null,
    secret_ciphertext: null,
    revision_note: null,
    saved_at: null,
    submitted_at: null,
    approved_at: null,
    approval_seq: null,
    secret_revealed_at: null,
    created_at: at,
  }));
}

export async function insertItems(db: Kysely<Database>, rows: Insertable<IntakeItemsTable>[]): Promise<void> {
  if (rows.length > 0) await db.insertInto('intake_items').values(rows).execute();
}

/** The intake in the caller's world; another account's or mode's intake is simply not found. */
export async function findIntake(
  db: Kysely<Database>,
  world: World,
  id: string,
): Promise<IntakeRow | undefined> {
  return db
    .selectFrom('intakes')
    .selectAll()
    .where('id', '=', canonicalIntakeId(id))
    .where('account_id', '=', world.accountId)
    .where('livemode', '=', world.livemode ? 1 : 0)
    .executeTakeFirst();
}

/** By id alone: for the portal (the id is the capability) and for jobs. */
export async function findIntakeById(db: Kysely<Database>, id: string): Promise<IntakeRow | undefined> {
  return db.selectFrom('intakes').selectAll().where('id', '=', canonicalIntakeId(id)).executeTakeFirst();
}

export interface IntakeFilters {
  status?: string | undefined;
  clientEmail?: string | undefined;
  limit: number;
  offset: number;
}

export async function listIntakes(
  db: Kysely<Database>,
  world: World,
  filters: IntakeFilters,
): Promise<{ total: number; rows: IntakeRow[] }> {
  let query = db
    .selectFrom('intakes')
    .where('account_id', '=', world.accountId)
    .where('livemode', '=', world.livemode ? 1 : 0);
  if (filters.status) query = query.where('status', '=', filters.status);
  if (filters.clientEmail) query = query.where('client_email', '=', filters.clientEmail.toLowerCase());
  const [count, rows] = await Promise.all([
    query.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow(),
    query
      .selectAll()
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(filters.limit)
      .offset(filters.offset)
      .execute(),
  ]);
  return { total: Number(count.n), rows };
}

export async function itemsOf(db: Kysely<Database>, intakeId: string): Promise<ItemRow[]> {
  return db
    .selectFrom('intake_items')
    .selectAll()
    .where('intake_id', '=', intakeId)
    .orderBy('position')
    .execute();
}

export async function findItem(
  db: Kysely<Database>,
  intakeId: string,
  key: string,
): Promise<ItemRow | undefined> {
  return db
    .selectFrom('intake_items')
    .selectAll()
    .where('intake_id', '=', intakeId)
    .where('key', '=', key)
    .executeTakeFirst();
}

export async function filesOf(db: Kysely<Database>, intakeId: string, itemKey?: string): Promise<FileRow[]> {
  let query = db.selectFrom('item_files').selectAll().where('intake_id', '=', intakeId);
  if (itemKey !== undefined) query = query.where('item_key', '=', itemKey);
  return query.orderBy('created_at').orderBy('id').execute();
}

export async function updateIntake(
  db: Kysely<Database>,
  id: string,
  patch: Updateable<IntakesTable>,
): Promise<void> {
  await db.updateTable('intakes').set(patch).where('id', '=', id).execute();
}

export async function updateItem(
  db: Kysely<Database>,
  intakeId: string,
  key: string,
  patch: Updateable<IntakeItemsTable>,
): Promise<void> {
  await db
    .updateTable('intake_items')
    .set(patch)
    .where('intake_id', '=', intakeId)
    .where('key', '=', key)
    .execute();
}

/**
 * Takes the intake's row lock for the rest of the transaction (a no-op write: PostgreSQL locks the row,
 * SQLite takes its write lock), so concurrent changes to one intake apply one after the other.
 */
export async function lockIntake(db: Kysely<Database>, id: string): Promise<IntakeRow | undefined> {
  await db
    .updateTable('intakes')
    .set((eb) => ({ updated_at: eb.ref('updated_at') }))
    .where('id', '=', id)
    .execute();
  return findIntakeById(db, id);
}

export async function deleteIntakeRows(db: Kysely<Database>, id: string): Promise<void> {
  await db.deleteFrom('item_files').where('intake_id', '=', id).execute();
  await db.deleteFrom('intake_items').where('intake_id', '=', id).execute();
  await db.deleteFrom('events').where('intake_id', '=', id).execute();
  // Jobs about the intake (subject: its id) or about one of its items (subject: `<id>/<key>`).
  await db
    .deleteFrom('jobs')
    .where((eb) => eb.or([eb('subject_id', '=', id), eb('subject_id', 'like', `${id}/%`)]))
    .execute();
  await db.deleteFrom('idempotency_keys').where('resource_id', '=', id).execute();
  await db.deleteFrom('intakes').where('id', '=', id).execute();
}
