import type { Kysely, Selectable } from 'kysely';
import type {
  Database,
  DeviceAuthorizationsTable,
  OAuthClientsTable,
  OAuthCodesTable,
  OAuthRefreshTokensTable,
} from '../../db/schema.js';

// The rows as the services see them: their JSON lists (redirect URIs, scopes) are parsed here when read
// and serialised here when written, nowhere else.
export type OAuthClientRow = Omit<Selectable<OAuthClientsTable>, 'redirect_uris'> & {
  redirect_uris: string[];
};
export type OAuthCodeRow = Omit<Selectable<OAuthCodesTable>, 'scopes'> & { scopes: string[] };
export type RefreshTokenRow = Omit<Selectable<OAuthRefreshTokensTable>, 'scopes'> & { scopes: string[] };
export type DeviceAuthorizationRow = Omit<
  Selectable<DeviceAuthorizationsTable>,
  'requested_scopes' | 'scopes'
> & {
  requested_scopes: string[];
  scopes: string[] | null;
};

const list = (json: string): string[] => JSON.parse(json) as string[];

function withScopes<T extends { scopes: string }>(row: T): Omit<T, 'scopes'> & { scopes: string[] } {
  return { ...row, scopes: list(row.scopes) };
}

function deviceOf(row: Selectable<DeviceAuthorizationsTable>): DeviceAuthorizationRow {
  return {
    ...row,
    requested_scopes: list(row.requested_scopes),
    scopes: row.scopes === null ? null : list(row.scopes),
  };
}

export async function insertClient(db: Kysely<Database>, row: OAuthClientRow): Promise<void> {
  await db
    .insertInto('oauth_clients')
    .values({ ...row, redirect_uris: JSON.stringify(row.redirect_uris) })
    .execute();
}

export async function findClient(db: Kysely<Database>, id: string): Promise<OAuthClientRow | undefined> {
  const row = await db.selectFrom('oauth_clients').selectAll().where('id', '=', id).executeTakeFirst();
  return row && { ...row, redirect_uris: list(row.redirect_uris) };
}

export async function insertCode(db: Kysely<Database>, row: OAuthCodeRow): Promise<void> {
  await db
    .insertInto('oauth_codes')
    .values({ ...row, scopes: JSON.stringify(row.scopes) })
    .execute();
}

export async function findCode(db: Kysely<Database>, hash: string): Promise<OAuthCodeRow | undefined> {
  const row = await db.selectFrom('oauth_codes').selectAll().where('code_hash', '=', hash).executeTakeFirst();
  return row && withScopes(row);
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
  await db
    .insertInto('oauth_refresh_tokens')
    .values({ ...row, scopes: JSON.stringify(row.scopes) })
    .execute();
}

export async function findRefreshToken(
  db: Kysely<Database>,
  hash: string,
): Promise<RefreshTokenRow | undefined> {
  const row = await db
    .selectFrom('oauth_refresh_tokens')
    .selectAll()
    .where('token_hash', '=', hash)
    .executeTakeFirst();
  return row && withScopes(row);
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
  await db
    .insertInto('device_authorizations')
    .values({
      ...row,
      requested_scopes: JSON.stringify(row.requested_scopes),
      scopes: row.scopes === null ? null : JSON.stringify(row.scopes),
    })
    .execute();
}

export async function findDeviceByCode(
  db: Kysely<Database>,
  deviceCodeHash: string,
): Promise<DeviceAuthorizationRow | undefined> {
  const row = await db
    .selectFrom('device_authorizations')
    .selectAll()
    .where('device_code_hash', '=', deviceCodeHash)
    .executeTakeFirst();
  return row && deviceOf(row);
}

export async function findDeviceByUserCode(
  db: Kysely<Database>,
  userCode: string,
): Promise<DeviceAuthorizationRow | undefined> {
  const row = await db
    .selectFrom('device_authorizations')
    .selectAll()
    .where('user_code', '=', userCode)
    .executeTakeFirst();
  return row && deviceOf(row);
}

export async function updateDevice(
  db: Kysely<Database>,
  deviceCodeHash: string,
  fromStatus: string,
  {
    requested_scopes,
    scopes,
    ...changes
  }: Partial<Omit<DeviceAuthorizationRow, 'device_code_hash' | 'user_code'>>,
): Promise<boolean> {
  const result = await db
    .updateTable('device_authorizations')
    .set({
      ...changes,
      ...(requested_scopes === undefined ? {} : { requested_scopes: JSON.stringify(requested_scopes) }),
      ...(scopes === undefined ? {} : { scopes: scopes === null ? null : JSON.stringify(scopes) }),
    })
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

/** Sign-ins of the account that can still mint access tokens: grants with a live refresh token. */
export async function countActiveGrants(
  db: Kysely<Database>,
  accountId: string,
  at: string,
): Promise<number> {
  const row = await db
    .selectFrom('oauth_refresh_tokens')
    .select((eb) => eb.fn.count<string | number>('grant_id').distinct().as('n'))
    .where('account_id', '=', accountId)
    .where('revoked_at', 'is', null)
    .where('expires_at', '>', at)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}
