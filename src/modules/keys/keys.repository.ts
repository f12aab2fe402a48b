import type { Kysely, Selectable } from 'kysely';
import type { AccountsTable, ApiKeysTable, Database } from '../../db/schema.js';

export type ApiKeyRow = Selectable<ApiKeysTable>;
export type AccountRow = Selectable<AccountsTable>;

export async function findActiveKeyByHash(
  db: Kysely<Database>,
  hash: string,
): Promise<{ key: ApiKeyRow; account: AccountRow } | undefined> {
  const key = await db
    .selectFrom('api_keys')
    .selectAll()
    .where('key_hash', '=', hash)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  if (!key) return undefined;
  const account = await db
    .selectFrom('accounts')
    .selectAll()
    .where('id', '=', key.account_id)
    .executeTakeFirst();
  return account ? { key, account } : undefined;
}

export async function insertKey(db: Kysely<Database>, row: ApiKeyRow): Promise<void> {
  await db.insertInto('api_keys').values(row).execute();
}

/** Keys visible from a mode: live keys manage every key of the account, test keys only test keys. */
export async function listKeys(
  db: Kysely<Database>,
  accountId: string,
  onlyTest: boolean,
): Promise<ApiKeyRow[]> {
  let query = db
    .selectFrom('api_keys')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('revoked_at', 'is', null);
  if (onlyTest) query = query.where('livemode', '=', 0);
  return query.orderBy('created_at', 'desc').orderBy('id', 'desc').execute();
}

export async function revokeKey(
  db: Kysely<Database>,
  accountId: string,
  keyId: string,
  onlyTest: boolean,
  at: string,
): Promise<boolean> {
  let query = db
    .updateTable('api_keys')
    .set({ revoked_at: at })
    .where('account_id', '=', accountId)
    .where('id', '=', keyId)
    .where('revoked_at', 'is', null);
  if (onlyTest) query = query.where('livemode', '=', 0);
  const result = await query.executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

export async function touchKey(db: Kysely<Database>, keyId: string, at: string): Promise<void> {
  await db.updateTable('api_keys').set({ last_used_at: at }).where('id', '=', keyId).execute();
}
