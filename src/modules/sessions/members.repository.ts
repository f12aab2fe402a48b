import { PostgresAdapter, type Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import type { UserRow } from './sessions.repository.js';

export async function findMember(
  db: Kysely<Database>,
  accountId: string,
  id: string,
): Promise<UserRow | undefined> {
  return db
    .selectFrom('account_users')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('id', '=', id)
    .executeTakeFirst();
}

/**
 * Serializes seat-taking changes of one account until the transaction ends, so two invitations at once
 * cannot both pass the last seat: the account row's lock on PostgreSQL; SQLite runs one write
 * transaction at a time (the single connection is held for the whole transaction).
 */
export async function lockAccountSeats(db: Kysely<Database>, accountId: string): Promise<void> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
  await db.selectFrom('accounts').select('id').where('id', '=', accountId).forUpdate().execute();
}

export async function countMembers(db: Kysely<Database>, accountId: string): Promise<number> {
  const row = await db
    .selectFrom('account_users')
    .select((eb) => eb.fn.countAll<string | number>().as('n'))
    .where('account_id', '=', accountId)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export async function setRole(
  db: Kysely<Database>,
  accountId: string,
  id: string,
  role: string,
): Promise<void> {
  await db
    .updateTable('account_users')
    .set({ role })
    .where('account_id', '=', accountId)
    .where('id', '=', id)
    .execute();
}

/** The account's people whose role is `role` (the owner: exactly one). */
export async function membersWithRole(
  db: Kysely<Database>,
  accountId: string,
  role: string,
): Promise<UserRow[]> {
  return db
    .selectFrom('account_users')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('role', '=', role)
    .execute();
}

/** Removes a person; their sessions and sign-in links go with the row (foreign keys cascade). */
export async function deleteMember(db: Kysely<Database>, accountId: string, id: string): Promise<boolean> {
  await db
    .deleteFrom('user_sessions')
    .where('account_id', '=', accountId)
    .where('user_id', '=', id)
    .execute();
  await db.deleteFrom('sign_in_tokens').where('user_id', '=', id).execute();
  const result = await db
    .deleteFrom('account_users')
    .where('account_id', '=', accountId)
    .where('id', '=', id)
    .executeTakeFirst();
  return result.numDeletedRows > 0n;
}
