import type { Kysely, Selectable } from 'kysely';
import type {
  Database,
  DeviceAuthorizationsTable,
  OAuthClientsTable,
  OAuthCodesTable,
  OAuthRefreshTokensTable,
} from '../../db/schema.js';

export type OAuthClientRow = Selectable<OAuthClientsTable>;
export type OAuthCodeRow = Selectable<OAuthCodesTable>;
export type RefreshTokenRow = Selectable<OAuthRefreshTokensTable>;
export type DeviceAuthorizationRow = Selectable<DeviceAuthorizationsTable>;

export async function insertClient(db: Kysely<Database>, row: OAuthClientRow): Promise<void> {
  await db.insertInto('oauth_clients').values(row).execute();
}

export async function findClient(db: Kysely<Database>, id: string): Promise<OAuthClientRow | undefined> {
  return db.selectFrom('oauth_clients').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function insertCode(db: Kysely<Database>, row: OAuthCodeRow): Promise<void> {
  await db.insertInto('oauth_codes').values(row).execute();
}

export async function findCode(db: Kysely<Database>, hash: string): Promise<OAuthCodeRow | undefined> {
  return db.selectFrom('oauth_codes').selectAll().where('code_hash', '=', hash).executeTakeFirst();
}

/** Marks a code used; false when it already was (a code works once). */
export async function useCode(db: Kysely<Database>, hash: string, at: string): Promise<boolean> {
  const result = await db
    .updateTable('oauth_codes')
    .set({ used_at: at })
    .where('code_hash', '=', hash)
    .where('used_at', 'is', null)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

export async function insertRefreshToken(db: Kysely<Database>, row: RefreshTokenRow): Promise<void> {
  await db.insertInto('oauth_refresh_tokens').values(row).execute();
}

export async function findRefreshToken(
  db: Kysely<Database>,
  hash: string,
): Promise<RefreshTokenRow | undefined> {
  return db.selectFrom('oauth_refresh_tokens').selectAll().where('token_hash', '=', hash).executeTakeFirst();
}

/** Revokes a refresh token; false when it already was (rotation races, replays). */
export async function revokeRefreshToken(db: Kysely<Database>, hash: string, at: string): Promise<boolean> {
  const result = await db
    .updateTable('oauth_refresh_tokens')
    .set({ revoked_at: at })
    .where('token_hash', '=', hash)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** Revokes an OAuth access token (an expiring API key); ordinary API keys are not touched here. */
export async function revokeAccessKey(db: Kysely<Database>, keyId: string, at: string): Promise<void> {
  await db
    .updateTable('api_keys')
    .set({ revoked_at: at })
    .where('id', '=', keyId)
    .where('expires_at', 'is not', null)
    .where('revoked_at', 'is', null)
    .execute();
}

export async function insertDeviceAuthorization(
  db: Kysely<Database>,
  row: DeviceAuthorizationRow,
): Promise<void> {
  await db.insertInto('device_authorizations').values(row).execute();
}

export async function findDeviceByCode(
  db: Kysely<Database>,
  deviceCodeHash: string,
): Promise<DeviceAuthorizationRow | undefined> {
  return db
    .selectFrom('device_authorizations')
    .selectAll()
    .where('device_code_hash', '=', deviceCodeHash)
    .executeTakeFirst();
}

export async function findDeviceByUserCode(
  db: Kysely<Database>,
  userCode: string,
): Promise<DeviceAuthorizationRow | undefined> {
  return db
    .selectFrom('device_authorizations')
    .selectAll()
    .where('user_code', '=', userCode)
    .executeTakeFirst();
}

export async function updateDevice(
  db: Kysely<Database>,
  deviceCodeHash: string,
  fromStatus: string,
  changes: Partial<Omit<DeviceAuthorizationRow, 'device_code_hash' | 'user_code'>>,
): Promise<boolean> {
  const result = await db
    .updateTable('device_authorizations')
    .set(changes)
    .where('device_code_hash', '=', deviceCodeHash)
    .where('status', '=', fromStatus)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

export async function recordDevicePoll(
  db: Kysely<Database>,
  deviceCodeHash: string,
  changes: { last_polled_ms: number; interval_seconds?: number },
): Promise<void> {
  await db
    .updateTable('device_authorizations')
    .set(changes)
    .where('device_code_hash', '=', deviceCodeHash)
    .execute();
}

/** Old device authorizations go once they expired a day ago (their codes are worthless by then). */
export async function deleteExpiredDevices(db: Kysely<Database>, beforeIso: string): Promise<number> {
  const result = await db
    .deleteFrom('device_authorizations')
    .where('expires_at', '<', beforeIso)
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** Retention: authorization codes and refresh tokens past their expiry. Returns how many. */
export async function deleteExpiredGrants(db: Kysely<Database>, nowIso: string): Promise<number> {
  const codes = await db.deleteFrom('oauth_codes').where('expires_at', '<', nowIso).executeTakeFirst();
  const refresh = await db
    .deleteFrom('oauth_refresh_tokens')
    .where('expires_at', '<', nowIso)
    .executeTakeFirst();
  return Number(codes.numDeletedRows) + Number(refresh.numDeletedRows);
}

/**
 * Revokes every token of a grant (a replayed code, a reused refresh token): its refresh tokens and the
 * access tokens issued with them. Returns how many refresh tokens were still live.
 */
export async function revokeGrant(db: Kysely<Database>, grantId: string, at: string): Promise<number> {
  await db
    .updateTable('api_keys')
    .set({ revoked_at: at })
    .where('id', 'in', (q) =>
      q
        .selectFrom('oauth_refresh_tokens')
        .select('access_key_id')
        .where('grant_id', '=', grantId)
        .where('access_key_id', 'is not', null),
    )
    .where('expires_at', 'is not', null)
    .where('revoked_at', 'is', null)
    .execute();
  const result = await db
    .updateTable('oauth_refresh_tokens')
    .set({ revoked_at: at })
    .where('grant_id', '=', grantId)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}
