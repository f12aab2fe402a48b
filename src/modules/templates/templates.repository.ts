import type { Kysely, Selectable } from 'kysely';
import type { Database, TemplatesTable } from '../../db/schema.js';
import type { ItemDefinition } from '../../domain/items.js';
import type { World } from '../../kernel/world.js';

/** A template as the service sees it: its items parsed from their JSON column here, once. */
export type TemplateRecord = Omit<Selectable<TemplatesTable>, 'items'> & { items: ItemDefinition[] };

function recordOf({ items, ...rest }: Selectable<TemplatesTable>): TemplateRecord {
  return { ...rest, items: JSON.parse(items) as ItemDefinition[] };
}

function inWorld(db: Kysely<Database>, world: World) {
  return db
    .selectFrom('templates')
    .selectAll()
    .where('account_id', '=', world.accountId)
    .where('livemode', '=', world.livemode ? 1 : 0);
}

export async function insertTemplate(db: Kysely<Database>, record: TemplateRecord): Promise<void> {
  await db
    .insertInto('templates')
    .values({ ...record, items: JSON.stringify(record.items) })
    .execute();
}

/**
 * One page of the world's templates, newest first, after the template `startingAfter` (a cursor);
 * undefined when that cursor is not one of the world's templates. Asks one row more than the page, so
 * the caller knows whether there is more.
 */
export async function templatePage(
  db: Kysely<Database>,
  world: World,
  page: { limit: number; startingAfter: string | undefined },
): Promise<TemplateRecord[] | undefined> {
  let rows = inWorld(db, world);
  if (page.startingAfter !== undefined) {
    const cursor = await inWorld(db, world).where('id', '=', page.startingAfter).executeTakeFirst();
    if (!cursor) return undefined;
    rows = rows.where((eb) =>
      eb.or([
        eb('created_at', '<', cursor.created_at),
        eb.and([eb('created_at', '=', cursor.created_at), eb('id', '<', cursor.id)]),
      ]),
    );
  }
  const found = await rows
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(page.limit + 1)
    .execute();
  return found.map(recordOf);
}

/**
 * How many templates the world has, and its account's plan, read with the account row locked on
 * PostgreSQL (SQLite has one writer), so two creations at once cannot both pass the plan's cap.
 */
export async function countTemplatesForCreation(
  db: Kysely<Database>,
  world: World,
  dialect: 'sqlite' | 'postgres',
): Promise<{ plan: string | undefined; count: number }> {
  const account = await db
    .selectFrom('accounts')
    .select('plan')
    .where('id', '=', world.accountId)
    .$if(dialect === 'postgres', (query) => query.forUpdate())
    .executeTakeFirst();
  const { n } = await db
    .selectFrom('templates')
    .select((eb) => eb.fn.countAll<string | number>().as('n'))
    .where('account_id', '=', world.accountId)
    .where('livemode', '=', world.livemode ? 1 : 0)
    .executeTakeFirstOrThrow();
  return { plan: account?.plan, count: Number(n) };
}

/** The world's templates, newest first. */
export async function templatesOf(db: Kysely<Database>, world: World): Promise<TemplateRecord[]> {
  const rows = await inWorld(db, world).orderBy('created_at', 'desc').orderBy('id', 'desc').execute();
  return rows.map(recordOf);
}

export async function findTemplate(
  db: Kysely<Database>,
  world: World,
  id: string,
): Promise<TemplateRecord | undefined> {
  const row = await inWorld(db, world).where('id', '=', id).executeTakeFirst();
  return row && recordOf(row);
}

/** Renames a world's template or replaces its items; false when it is not this world's. */
export async function updateTemplateRow(
  db: Kysely<Database>,
  world: World,
  id: string,
  changes: { name?: string; items?: ItemDefinition[] },
): Promise<boolean> {
  const result = await db
    .updateTable('templates')
    .set({
      ...(changes.name !== undefined ? { name: changes.name } : {}),
      ...(changes.items !== undefined ? { items: JSON.stringify(changes.items) } : {}),
      id,
    })
    .where('id', '=', id)
    .where('account_id', '=', world.accountId)
    .where('livemode', '=', world.livemode ? 1 : 0)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** Deletes a world's template; false when it is not this world's. */
export async function deleteTemplateRow(db: Kysely<Database>, world: World, id: string): Promise<boolean> {
  const result = await db
    .deleteFrom('templates')
    .where('id', '=', id)
    .where('account_id', '=', world.accountId)
    .where('livemode', '=', world.livemode ? 1 : 0)
    .executeTakeFirst();
  return result.numDeletedRows > 0n;
}
