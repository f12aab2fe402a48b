import { PostgresAdapter, sql, type Kysely, type Selectable } from 'kysely';
import { answerVersionSql } from '../../db/database.js';
import { preparedQuery } from '../../db/prepared.js';
import type { AccountsTable, ApiKeysTable, Database } from '../../db/schema.js';
import { systemClock } from '../../lib/clock.js';

/** A key as the services see it: its scopes parsed from their JSON column here, once per read. */
export type ApiKeyRow = Omit<Selectable<ApiKeysTable>, 'scopes'> & { scopes: string[] };
export type AccountRow = Selectable<AccountsTable>;

function keyWithAccountQuery(db: Kysely<Database>, hash: string) {
  // PostgreSQL keeps no key between requests: its account's answer version comes in the same statement,
  // read before anything else the request reads (the kept answers check against it, read-cache.ts).
  const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
  return db
    .selectFrom('api_keys as k')
    .innerJoin('accounts as a', 'a.id', 'k.account_id')
    .leftJoin('account_users as u', 'u.id', 'k.created_by_user_id')
    .select([
      'k.id as key_id',
      'k.livemode as key_livemode',
      'k.name as key_name',
      'k.scopes as key_scopes',
      'k.prefix as key_prefix',
      'k.created_by_key_id as key_created_by_key_id',
      'k.created_at as key_created_at',
      'k.last_used_at as key_last_used_at',
      'k.expires_at as key_expires_at',
      'k.created_by_user_id as key_created_by_user_id',
      'u.role as person_role',
      'a.id',
      'a.name',
      'a.email',
      'a.plan',
      'a.default_language',
      'a.rate_limit_per_hour',
      'a.test_clock_offset_ms',
      'a.created_at',
    ])
    .$if(postgres, (query) => query.select(answerVersionSql(sql.ref('a.id')).as('answer_version')))
    .where('k.key_hash', '=', hash)
    .where('k.revoked_at', 'is', null);
}
const selectKeyWithAccount = preparedQuery(keyWithAccountQuery, ['']);

/**
 * The key and its account in one indexed read: this runs on every authenticated request.
 * A key past its `expires_at` (an OAuth access token) is not found, as a revoked one, and so is a key
 * whose person is no longer a member of the account. `personRole` is the role of the key's person
 * (null: a key of the account holder's own, made with no person).
 */
export async function findActiveKeyByHash(
  db: Kysely<Database>,
  hash: string,
  at: Date = systemClock.now(),
): Promise<
  | {
      key: ApiKeyRow;
      account: AccountRow;
      personRole: string | null;
      /** The account's answer version, read in the same statement (PostgreSQL only). */
      answerVersion: number | undefined;
    }
  | undefined
> {
  const rows = await selectKeyWithAccount(db, hash);
  const row = rows[0];
  if (!row) return undefined;
  if (row.key_expires_at !== null && row.key_expires_at <= at.toISOString()) return undefined;
  if (row.key_created_by_user_id !== null && row.person_role === null) return undefined;
  return {
    personRole: row.person_role,
    answerVersion: row.answer_version,
    key: {
      id: row.key_id,
      account_id: row.id,
      livemode: row.key_livemode,
      name: row.key_name,
      scopes: JSON.parse(row.key_scopes) as string[],
      prefix: row.key_prefix,
      key_hash: hash,
      created_by_key_id: row.key_created_by_key_id,
      created_at: row.key_created_at,
      last_used_at: row.key_last_used_at,
      revoked_at: null,
      expires_at: row.key_expires_at,
      created_by_user_id: row.key_created_by_user_id,
    },
    account: {
      id: row.id,
      name: row.name,
      email: row.email,
      plan: row.plan,
      default_language: row.default_language,
      rate_limit_per_hour: row.rate_limit_per_hour,
      test_clock_offset_ms: Number(row.test_clock_offset_ms),
      created_at: row.created_at,
    },
  };
}

export async function insertKey(db: Kysely<Database>, row: ApiKeyRow): Promise<void> {
  await db
    .insertInto('api_keys')
    .values({ ...row, scopes: JSON.stringify(row.scopes) })
    .execute();
}

/**
 * Keys visible from a mode: live keys manage every key of the account, test keys only test keys.
 * Expired keys (OAuth access tokens past their hour) are gone, as revoked ones are.
 */
export async function listKeys(
  db: Kysely<Database>,
  accountId: string,
  onlyTest: boolean,
  at: Date = systemClock.now(),
): Promise<ApiKeyRow[]> {
  let query = db
    .selectFrom('api_keys')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('revoked_at', 'is', null)
    .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', at.toISOString())]));
  if (onlyTest) query = query.where('livemode', '=', 0);
  const rows = await query.orderBy('created_at', 'desc').orderBy('id', 'desc').execute();
  return rows.map((row) => ({ ...row, scopes: JSON.parse(row.scopes) as string[] }));
}

/** A key's name, by its id within the account (revoked keys too: a record may outlive its key). */
export async function keyNameOf(
  db: Kysely<Database>,
  accountId: string,
  keyId: string,
): Promise<string | null> {
  const row = await db
    .selectFrom('api_keys')
    .select('name')
    .where('account_id', '=', accountId)
    .where('id', '=', keyId)
    .executeTakeFirst();
  return row?.name ?? null;
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

/** Revokes every key a person made (they left the account): they stop working at once. */
export async function revokeKeysOfPerson(
  db: Kysely<Database>,
  accountId: string,
  userId: string,
  at: string,
): Promise<number> {
  const result = await db
    .updateTable('api_keys')
    .set({ revoked_at: at })
    .where('account_id', '=', accountId)
    .where('created_by_user_id', '=', userId)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

export async function touchKey(db: Kysely<Database>, keyId: string, at: string): Promise<void> {
  await db.updateTable('api_keys').set({ last_used_at: at }).where('id', '=', keyId).execute();
}

/**
 * Serializes key creations of one account until the transaction ends, so two at once cannot both pass
 * the plan's cap: the account row's lock on PostgreSQL; SQLite runs one write transaction at a time.
 */
export async function lockAccountKeys(db: Kysely<Database>, accountId: string): Promise<void> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
  await db.selectFrom('accounts').select('id').where('id', '=', accountId).forUpdate().execute();
}

/** Keys that count against the plan: not revoked, and without an expiry (OAuth access tokens have one). */
export async function countLastingKeys(db: Kysely<Database>, accountId: string): Promise<number> {
  const row = await db
    .selectFrom('api_keys')
    .select((eb) => eb.fn.countAll<string | number>().as('n'))
    .where('account_id', '=', accountId)
    .where('revoked_at', 'is', null)
    .where('expires_at', 'is', null)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export async function accountPlan(db: Kysely<Database>, accountId: string): Promise<string | undefined> {
  const row = await db.selectFrom('accounts').select('plan').where('id', '=', accountId).executeTakeFirst();
  return row?.plan;
}

/**
 * Retention: OAuth access tokens (keys with an expiry) past their expiry. Such a key no longer
 * authenticates nor shows in lists; its row only waits here. Returns how many.
 */
export async function deleteExpiredKeys(db: Kysely<Database>, nowIso: string): Promise<number> {
  const result = await db
    .deleteFrom('api_keys')
    .where('expires_at', 'is not', null)
    .where('expires_at', '<', nowIso)
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
