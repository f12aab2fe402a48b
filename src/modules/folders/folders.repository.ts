import type { Insertable, Kysely, Selectable } from 'kysely';
import type { Database, FoldersTable } from '../../db/schema.js';

export type FolderRow = Selectable<FoldersTable>;
interface Tenant {
  accountId: string;
  livemode: boolean;
}

function ofTenant(db: Kysely<Database>, tenant: Tenant) {
  return db
    .selectFrom('folders')
    .where('folders.account_id', '=', tenant.accountId)
    .where('folders.livemode', '=', tenant.livemode ? 1 : 0);
}

export async function insertFolder(db: Kysely<Database>, row: Insertable<FoldersTable>): Promise<void> {
  await db.insertInto('folders').values(row).execute();
}

export async function findFolder(
  db: Kysely<Database>,
  tenant: Tenant,
  id: string,
): Promise<FolderRow | undefined> {
  return ofTenant(db, tenant).selectAll().where('id', '=', id).executeTakeFirst();
}

/** A folder of the tenant with this name, compared case-insensitively (the same on both databases). */
export async function findFolderByName(
  db: Kysely<Database>,
  tenant: Tenant,
  name: string,
): Promise<FolderRow | undefined> {
  return ofTenant(db, tenant)
    .selectAll()
    .where((eb) => eb(eb.fn('lower', ['name']), '=', name.toLowerCase()))
    .executeTakeFirst();
}

/** The tenant's folders by name, each with how many intakes it holds. */
export async function listFolders(db: Kysely<Database>, tenant: Tenant) {
  const rows = await ofTenant(db, tenant)
    .leftJoin('intakes', (join) =>
      join
        .onRef('intakes.folder_id', '=', 'folders.id')
        .onRef('intakes.account_id', '=', 'folders.account_id')
        .onRef('intakes.livemode', '=', 'folders.livemode'),
    )
    .select((eb) => [
      'folders.id',
      'folders.name',
      'folders.created_at',
      'folders.updated_at',
      eb.fn.count<number>('intakes.id').as('intake_count'),
    ])
    .groupBy(['folders.id', 'folders.name', 'folders.created_at', 'folders.updated_at'])
    .orderBy('folders.name')
    .orderBy('folders.id')
    .execute();
  return rows.map((row) => ({ ...row, intake_count: Number(row.intake_count) }));
}

export async function countIntakesIn(
  db: Kysely<Database>,
  tenant: Tenant,
  folderId: string,
): Promise<number> {
  const row = await db
    .selectFrom('intakes')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('account_id', '=', tenant.accountId)
    .where('livemode', '=', tenant.livemode ? 1 : 0)
    .where('folder_id', '=', folderId)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export async function renameFolder(
  db: Kysely<Database>,
  id: string,
  name: string,
  at: string,
): Promise<void> {
  await db.updateTable('folders').set({ name, updated_at: at }).where('id', '=', id).execute();
}

/** Deletes the folder; its intakes stay, unfiled (in the same transaction). */
export async function deleteFolderRow(db: Kysely<Database>, tenant: Tenant, id: string): Promise<void> {
  await db
    .updateTable('intakes')
    .set({ folder_id: null })
    .where('account_id', '=', tenant.accountId)
    .where('livemode', '=', tenant.livemode ? 1 : 0)
    .where('folder_id', '=', id)
    .execute();
  await db.deleteFrom('folders').where('id', '=', id).execute();
}
