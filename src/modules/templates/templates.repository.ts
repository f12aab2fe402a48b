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
