import type { Kysely, Selectable } from 'kysely';
import type { AccountUsersTable, Database, UserSessionsTable } from '../../db/schema.js';

export type UserRow = Selectable<AccountUsersTable>;
export type SessionRow = Selectable<UserSessionsTable>;

/** One of a person's accounts, as the sign-in and the account switcher see it. */
export interface Membership {
  user_id: string;
  account_id: string;
  account_name: string;
  role: string;
  status: string;
  last_used_at: string | null;
  created_at: string;
}

/**
 * Every account an address belongs to (one row each): the one used last first, then active before
 * invited, then the oldest. A sign-in link lands in the first.
 */
export async function membershipsOf(db: Kysely<Database>, email: string): Promise<Membership[]> {
  const rows = await db
    .selectFrom('account_users as u')
    .innerJoin('accounts as a', 'a.id', 'u.account_id')
    .select([
      'u.id as user_id',
      'u.account_id',
      'a.name as account_name',
      'u.role',
      'u.status',
      'u.last_used_at',
      'u.created_at',
    ])
    .where('u.email', '=', email.trim().toLowerCase())
    .execute();
  return rows.sort(
    (a, b) =>
      (b.last_used_at ?? '').localeCompare(a.last_used_at ?? '') ||
      Number(b.status === 'active') - Number(a.status === 'active') ||
      a.created_at.localeCompare(b.created_at) ||
      a.user_id.localeCompare(b.user_id),
  );
}

export async function findUserById(db: Kysely<Database>, userId: string): Promise<UserRow | undefined> {
  return db.selectFrom('account_users').selectAll().where('id', '=', userId).executeTakeFirst();
}

/** The address's person in one account, or undefined when the address is not one of its people. */
export async function findUserInAccount(
  db: Kysely<Database>,
  accountId: string,
  email: string,
): Promise<UserRow | undefined> {
  return db
    .selectFrom('account_users')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('email', '=', email.trim().toLowerCase())
    .executeTakeFirst();
}

export async function listUsers(db: Kysely<Database>, accountId: string): Promise<UserRow[]> {
  return db
    .selectFrom('account_users')
    .selectAll()
    .where('account_id', '=', accountId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

export async function insertUser(db: Kysely<Database>, row: UserRow): Promise<void> {
  await db.insertInto('account_users').values(row).execute();
}

export async function deleteUser(db: Kysely<Database>, accountId: string, userId: string): Promise<boolean> {
  const result = await db
    .deleteFrom('account_users')
    .where('account_id', '=', accountId)
    .where('id', '=', userId)
    .where('role', '!=', 'owner')
    .executeTakeFirst();
  return result.numDeletedRows > 0n;
}

export async function insertSignInToken(
  db: Kysely<Database>,
  row: {
    token_hash: string;
    user_id: string;
    return_to: string | null;
    expires_at: string;
    created_at: string;
    purpose: 'sign_in' | 'invitation';
  },
): Promise<void> {
  await db
    .insertInto('sign_in_tokens')
    .values({ ...row, used_at: null })
    .execute();
}

export async function deleteSignInToken(db: Kysely<Database>, tokenHash: string): Promise<void> {
  await db.deleteFrom('sign_in_tokens').where('token_hash', '=', tokenHash).execute();
}

/**
 * When the user's latest sign-in link that still works was made: not used, not expired (a user who
 * used their link, or let it expire, gets a new one at once).
 */
export async function lastUsableSignInLinkAt(
  db: Kysely<Database>,
  userId: string,
  nowIso: string,
): Promise<string | undefined> {
  const row = await db
    .selectFrom('sign_in_tokens')
    .select('created_at')
    .where('user_id', '=', userId)
    .where('purpose', '=', 'sign_in')
    .where('used_at', 'is', null)
    .where('expires_at', '>', nowIso)
    .orderBy('created_at', 'desc')
    .limit(1)
    .executeTakeFirst();
  return row?.created_at;
}

/**
 * Marks a link used, atomically: of two concurrent clicks exactly one wins. Expired and used links
 * match nothing. Returns the link's user and landing path when this call consumed it.
 */
export async function consumeSignInToken(
  db: Kysely<Database>,
  tokenHash: string,
  nowIso: string,
): Promise<{ user_id: string; return_to: string | null; purpose: string } | undefined> {
  const result = await db
    .updateTable('sign_in_tokens')
    .set({ used_at: nowIso })
    .where('token_hash', '=', tokenHash)
    .where('used_at', 'is', null)
    .where('expires_at', '>', nowIso)
    .executeTakeFirst();
  if (result.numUpdatedRows === 0n) return undefined;
  return db
    .selectFrom('sign_in_tokens')
    .select(['user_id', 'return_to', 'purpose'])
    .where('token_hash', '=', tokenHash)
    .executeTakeFirst();
}

/** Expired links and sessions, removed on the way (no table grows without bound). */
export async function deleteExpired(db: Kysely<Database>, nowIso: string): Promise<number> {
  const links = await db.deleteFrom('sign_in_tokens').where('expires_at', '<', nowIso).executeTakeFirst();
  const sessions = await db.deleteFrom('user_sessions').where('expires_at', '<', nowIso).executeTakeFirst();
  return Number(links.numDeletedRows) + Number(sessions.numDeletedRows);
}

export async function insertSession(db: Kysely<Database>, row: SessionRow): Promise<void> {
  await db.insertInto('user_sessions').values(row).execute();
}

export interface SessionWithUser {
  session: SessionRow;
  user: UserRow;
}

export async function findLiveSession(
  db: Kysely<Database>,
  idHash: string,
  nowIso: string,
): Promise<SessionWithUser | undefined> {
  const row = await db
    .selectFrom('user_sessions as s')
    .innerJoin('account_users as u', 'u.id', 's.user_id')
    .select([
      's.id_hash',
      's.user_id',
      's.account_id',
      's.livemode',
      's.created_at as session_created_at',
      's.expires_at',
      's.last_seen_at',
      'u.email',
      'u.role',
      'u.invited_by_user_id',
      'u.created_at as user_created_at',
      'u.last_signed_in_at',
      'u.name',
      'u.status',
      'u.last_used_at',
    ])
    .where('s.id_hash', '=', idHash)
    .where('s.expires_at', '>', nowIso)
    .executeTakeFirst();
  if (!row) return undefined;
  return {
    session: {
      id_hash: row.id_hash,
      user_id: row.user_id,
      account_id: row.account_id,
      livemode: row.livemode,
      created_at: row.session_created_at,
      expires_at: row.expires_at,
      last_seen_at: row.last_seen_at,
    },
    user: {
      id: row.user_id,
      account_id: row.account_id,
      email: row.email,
      role: row.role,
      invited_by_user_id: row.invited_by_user_id,
      created_at: row.user_created_at,
      last_signed_in_at: row.last_signed_in_at,
      name: row.name,
      status: row.status,
      last_used_at: row.last_used_at,
    },
  };
}

export async function updateSession(
  db: Kysely<Database>,
  idHash: string,
  changes: Partial<Pick<SessionRow, 'livemode' | 'last_seen_at'>>,
): Promise<void> {
  await db.updateTable('user_sessions').set(changes).where('id_hash', '=', idHash).execute();
}

/** Moves a session to another of the same person's accounts (the account switcher). */
export async function moveSession(
  db: Kysely<Database>,
  idHash: string,
  to: { userId: string; accountId: string; nowIso: string },
): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await trx
      .updateTable('user_sessions')
      .set({ user_id: to.userId, account_id: to.accountId, last_seen_at: to.nowIso })
      .where('id_hash', '=', idHash)
      .execute();
    await trx
      .updateTable('account_users')
      .set({ last_used_at: to.nowIso })
      .where('id', '=', to.userId)
      .execute();
  });
}

export async function deleteSession(db: Kysely<Database>, idHash: string): Promise<void> {
  await db.deleteFrom('user_sessions').where('id_hash', '=', idHash).execute();
}

export async function deleteSessionsOfUser(db: Kysely<Database>, userId: string): Promise<void> {
  await db.deleteFrom('user_sessions').where('user_id', '=', userId).execute();
}

export async function markSignedIn(db: Kysely<Database>, userId: string, nowIso: string): Promise<void> {
  await db
    .updateTable('account_users')
    .set({ last_signed_in_at: nowIso, last_used_at: nowIso, status: 'active' })
    .where('id', '=', userId)
    .execute();
}
