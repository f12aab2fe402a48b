import type { Kysely } from 'kysely';
import type { z } from 'zod';
import type { Database } from '../../db/schema.js';
import { ApiError, notFound } from '../../http/errors.js';
import { newId } from '../../lib/ids.js';
import { auditInTransaction } from '../audit/audit.scope.js';
import type { World } from '../../kernel/world.js';
import {
  countIntakesIn,
  deleteFolderRow,
  findFolder,
  findFolderByName,
  insertFolder,
  listFolders,
  renameFolder,
  type FolderRow,
} from './folders.repository.js';
import type { Folder } from './folders.schemas.js';

type FolderRecord = z.infer<typeof Folder>;

/** The folder in the caller's world; another account's (or mode's) folder is not found (404). */
export async function requireFolder(db: Kysely<Database>, world: World, id: string): Promise<FolderRow> {
  const folder = await findFolder(db, world, id);
  if (!folder) throw notFound('folder', id);
  return folder;
}

async function assertNameFree(db: Kysely<Database>, world: World, name: string, except?: string) {
  const existing = await findFolderByName(db, world, name);
  if (existing && existing.id !== except) {
    throw new ApiError('conflict', `A folder named "${existing.name}" already exists (${existing.id}).`, {
      resource: { id: existing.id, name: existing.name },
    });
  }
}

async function toRecord(db: Kysely<Database>, world: World, row: FolderRow): Promise<FolderRecord> {
  return {
    id: row.id,
    name: row.name,
    intake_count: await countIntakesIn(db, world, row.id),
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

export async function createFolder(db: Kysely<Database>, world: World, name: string): Promise<FolderRecord> {
  return db.transaction().execute(async (trx) => {
    await assertNameFree(trx, world, name);
    const at = world.clock.now().toISOString();
    const row: FolderRow = {
      id: newId('fld'),
      account_id: world.accountId,
      livemode: world.livemode ? 1 : 0,
      name,
      created_at: at,
      updated_at: at,
    };
    await insertFolder(trx, row);
    await auditInTransaction(trx, row.id);
    return { id: row.id, name, intake_count: 0, created_at: at, updated_at: at };
  });
}

export async function listFoldersOf(
  db: Kysely<Database>,
  world: World,
): Promise<{ folders: FolderRecord[] }> {
  return { folders: await listFolders(db, world) };
}

export async function renameFolderOf(
  db: Kysely<Database>,
  world: World,
  id: string,
  name: string,
): Promise<FolderRecord> {
  return db.transaction().execute(async (trx) => {
    const folder = await requireFolder(trx, world, id);
    await assertNameFree(trx, world, name, folder.id);
    const at = world.clock.now().toISOString();
    await renameFolder(trx, folder.id, name, at);
    await auditInTransaction(trx);
    return toRecord(trx, world, { ...folder, name, updated_at: at });
  });
}

export async function deleteFolderOf(db: Kysely<Database>, world: World, id: string): Promise<void> {
  await db.transaction().execute(async (trx) => {
    const folder = await requireFolder(trx, world, id);
    await deleteFolderRow(trx, world, folder.id);
    await auditInTransaction(trx);
  });
}
