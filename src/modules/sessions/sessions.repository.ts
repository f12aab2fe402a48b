import type { Kysely, Selectable } from 'kysely';
import type { AccountUsersTable, Database, UserSessionsTable } from '../../db/schema.js';

export type UserRow = Selectable<AccountUsersTable>;
export type SessionRow = Selectable<UserSessionsTable>;

export async function findUserByEmail(db: Kysely<Database>, email: string): Promise<UserRow | undefined> {
  return db
    .selectFrom('account_users')
    .selectAll()
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
): Promise<{ user_id: string; return_to: string | null } | undefined> {
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
    .select(['user_id', 'return_to'])
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

export async function deleteSession(db: Kysely<Database>, idHash: string): Promise<void> {
  await db.deleteFrom('user_sessions').where('id_hash', '=', idHash).execute();
}

export async function deleteSessionsOfUser(db: Kysely<Database>, userId: string): Promise<void> {
  await db.deleteFrom('user_sessions').where('user_id', '=', userId).execute();
}

export async function markSignedIn(db: Kysely<Database>, userId: string, nowIso: string): Promise<void> {
  await db
    .updateTable('account_users')
    .set({ last_signed_in_at: nowIso, status: 'active' })
    .where('id', '=', userId)
    .execute();
}
