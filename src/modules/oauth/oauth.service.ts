import { effectiveScopes } from '../../domain/roles.js';
import { personRole } from '../sessions/members.service.js';
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import { pkceS256Matches } from '../../domain/oauth.js';
import { scopesNotHeld, type Scope } from '../../domain/scopes.js';
import { newId, randomBase62 } from '../../lib/ids.js';
import { constantTimeEqual, sha256Hex } from '../../lib/secrets.js';
import { insertAuditEntry } from '../audit/audit.service.js';
import { ApiError } from '../../http/errors.js';
import { assertPlanAllowsAnotherKey, createKey, deleteExpiredKeys } from '../keys/keys.service.js';
import {
  deleteExpiredDevices,
  deleteExpiredGrants,
  findClient,
  findCode,
  findRefreshToken,
  insertClient,
  insertCode,
  insertRefreshToken,
  revokeAccessKey,
  revokeGrant,
  revokeRefreshToken,
  useCode,
  type OAuthClientRow,
} from './oauth.repository.js';

/** Access tokens are API keys that expire: short, so a leaked one is worth little. */
export const ACCESS_TOKEN_TTL_MS = 60 * 60 * 1000;
export const REFRESH_TOKEN_TTL_MS = 30 * 24 * 60 * 60 * 1000;
export const CODE_TTL_MS = 5 * 60 * 1000;

/** An OAuth error answer (RFC 6749 §5.2, RFC 8628 §3.5): its code and what to fix. */
export class OAuthError extends Error {
  constructor(
    readonly error: string,
    description: string,
    readonly status = 400,
    readonly headers: Record<string, string> = {},
  ) {
    super(description);
    this.name = 'OAuthError';
  }
}

export interface TokenResponse {
  access_token: string;
  token_type: 'Bearer';
  expires_in?: number;
  refresh_token?: string;
  scope: string;
}

// ---------------------------------------------------------------------------------------------------
// Clients (RFC 7591)

export interface ClientRegistration {
  redirect_uris: string[];
  client_name: string | undefined;
  token_endpoint_auth_method: 'none' | 'client_secret_post' | 'client_secret_basic';
}

export async function registerClient(db: Kysely<Database>, input: ClientRegistration, at: Date) {
  const id = newId('oac');
  const secret = input.token_endpoint_auth_method === 'none' ? undefined : `ocs_${randomBase62(43)}`;
  const name = input.client_name ?? 'Unnamed client';
  await insertClient(db, {
    id,
    name,
    redirect_uris: input.redirect_uris,
    auth_method: input.token_endpoint_auth_method,
    secret_hash: secret ? sha256Hex(secret) : null,
    created_at: at.toISOString(),
  });
  return {
    client_id: id,
    client_id_issued_at: Math.floor(at.getTime() / 1000),
    ...(secret ? { client_secret: secret, client_secret_expires_at: 0 } : {}),
    client_name: name,
    redirect_uris: input.redirect_uris,
    token_endpoint_auth_method: input.token_endpoint_auth_method,
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
  };
}

export interface ClientCredentials {
  clientId: string | undefined;
  clientSecret: string | undefined;
}

/** The calling client at the token and revocation endpoints: public clients by id, others by secret. */
export async function authenticateClient(
  db: Kysely<Database>,
  credentials: ClientCredentials,
): Promise<OAuthClientRow> {
  const client = credentials.clientId ? await findClient(db, credentials.clientId) : undefined;
  if (!client) throw new OAuthError('invalid_client', 'Unknown client_id: register the client first.', 401);
  if (client.secret_hash) {
    const given = credentials.clientSecret;
    if (!given || !constantTimeEqual(sha256Hex(given), client.secret_hash)) {
      throw new OAuthError('invalid_client', 'Client authentication failed.', 401);
    }
  }
  return client;
}

export function redirectUrisOf(client: OAuthClientRow): string[] {
  return client.redirect_uris;
}

// ---------------------------------------------------------------------------------------------------
// Authorization code with PKCE

export interface Grant {
  accountId: string;
  livemode: boolean;
  userId: string;
  scopes: Scope[];
}

/** A bearer secret: 256 random bits behind a prefix that says what it is. */
export const secretToken = (prefix: string) => `${prefix}_${randomBase62(43)}`;

/** Records an authorization code for a consented request; the code is returned once, stored hashed. */
export async function issueCode(
  db: Kysely<Database>,
  request: Grant & {
    client: OAuthClientRow;
    redirectUri: string;
    codeChallenge: string;
    resource: string | null;
  },
  at: Date,
): Promise<string> {
  const code = secretToken('oc');
  await insertCode(db, {
    code_hash: sha256Hex(code),
    client_id: request.client.id,
    account_id: request.accountId,
    livemode: request.livemode ? 1 : 0,
    user_id: request.userId,
    scopes: request.scopes,
    redirect_uri: request.redirectUri,
    code_challenge: request.codeChallenge,
    resource: request.resource,
    created_at: at.toISOString(),
    expires_at: new Date(at.getTime() + CODE_TTL_MS).toISOString(),
    used_at: null,
  });
  return code;
}

/**
 * An access token (an API key with the granted scopes that expires) and, for OAuth clients, a refresh
 * token, in one transaction with the audit entry naming the user who granted them.
 */
async function issueTokens(
  db: Kysely<Database>,
  grant: Grant & { client: OAuthClientRow; resource: string | null; grantId: string },
  at: Date,
  requestId: string,
  /** A code's first tokens begin a sign-in, which counts against max_api_keys; a refresh continues one. */
  begins: boolean,
): Promise<{ response: TokenResponse; keyId: string }> {
  return db.transaction().execute(async (trx) => {
    // Never more than the granting person's role allows today; nothing once they have left.
    const role = await personRole(trx, grant.accountId, grant.userId);
    if (!role) throw new OAuthError('invalid_grant', 'The person who granted access is no longer a member.');
    if (begins) await assertRoomForSignIn(trx, grant.accountId, at);
    grant = { ...grant, scopes: effectiveScopes(grant.scopes, role) as Scope[] };
    const key = await createKey(
      trx,
      // The key records the person who granted it: it never holds more than their role, and ends with them.
      {
        accountId: grant.accountId,
        createdByKeyId: null,
        createdByUserId: grant.userId,
        at: at.toISOString(),
      },
      {
        name: `OAuth: ${grant.client.name}`.slice(0, 200),
        mode: grant.livemode ? 'live' : 'test',
        scopes: grant.scopes,
        expiresAt: new Date(at.getTime() + ACCESS_TOKEN_TTL_MS).toISOString(),
      },
    );
    const refresh = secretToken('ort');
    await insertRefreshToken(trx, {
      token_hash: sha256Hex(refresh),
      id: newId('ort'),
      client_id: grant.client.id,
      account_id: grant.accountId,
      livemode: grant.livemode ? 1 : 0,
      user_id: grant.userId,
      scopes: grant.scopes,
      resource: grant.resource,
      access_key_id: key.id,
      grant_id: grant.grantId,
      created_at: at.toISOString(),
      expires_at: new Date(at.getTime() + REFRESH_TOKEN_TTL_MS).toISOString(),
      revoked_at: null,
    });
    await insertAuditEntry(trx, {
      account_id: grant.accountId,
      livemode: grant.livemode ? 1 : 0,
      action: 'oauth.token_issued',
      resource_type: 'api_key',
      resource_id: key.id,
      actor_type: 'user',
      actor_id: grant.userId,
      request_id: requestId,
      created_at: at.toISOString(),
    });
    return {
      keyId: key.id,
      response: {
        access_token: key.key,
        token_type: 'Bearer',
        expires_in: ACCESS_TOKEN_TTL_MS / 1000,
        refresh_token: refresh,
        scope: grant.scopes.join(' '),
      },
    };
  });
}

/** The plan's cap on lasting credentials, said as the token endpoint says errors. */
async function assertRoomForSignIn(db: Kysely<Database>, accountId: string, at: Date): Promise<void> {
  try {
    await assertPlanAllowsAnotherKey(db, accountId, at.toISOString());
  } catch (error) {
    if (error instanceof ApiError && error.code === 'plan_required') {
      throw new OAuthError(
        'invalid_grant',
        `${error.message} Revoke an agent's sign-in or a key in the dashboard, then sign in again.`,
      );
    }
    throw error;
  }
}

/**
 * A code presented twice was stolen or replayed (OAuth 2.1 §4.1.3): whoever holds it, the tokens
 * issued from it are revoked, and the request is refused.
 */
async function refuseReplayedCode(db: Kysely<Database>, codeHash: string, at: Date): Promise<never> {
  await revokeGrant(db, codeHash, at.toISOString());
  throw new OAuthError(
    'invalid_grant',
    'This authorization code was already used: the tokens issued from it are revoked. Sign in again.',
  );
}

export async function exchangeCode(
  db: Kysely<Database>,
  client: OAuthClientRow,
  params: { code: string; redirectUri: string; codeVerifier: string },
  at: Date,
  requestId: string,
): Promise<TokenResponse> {
  const hash = sha256Hex(params.code);
  const code = await findCode(db, hash);
  if (!code || code.client_id !== client.id)
    throw new OAuthError('invalid_grant', 'Unknown authorization code.');
  if (code.used_at) await refuseReplayedCode(db, hash, at);
  if (code.expires_at <= at.toISOString())
    throw new OAuthError('invalid_grant', 'The authorization code expired.');
  if (code.redirect_uri !== params.redirectUri) {
    throw new OAuthError('invalid_grant', 'redirect_uri differs from the one of the authorization request.');
  }
  if (!pkceS256Matches(params.codeVerifier, code.code_challenge)) {
    throw new OAuthError('invalid_grant', 'code_verifier does not match the code_challenge (PKCE S256).');
  }
  if (!(await useCode(db, hash, at.toISOString()))) await refuseReplayedCode(db, hash, at);
  const { response } = await issueTokens(
    db,
    {
      client,
      accountId: code.account_id,
      livemode: code.livemode === 1,
      userId: code.user_id,
      scopes: code.scopes as Scope[],
      resource: code.resource,
      grantId: hash,
    },
    at,
    requestId,
    true,
  );
  return response;
}

/**
 * Refresh token rotation: the old refresh token and its access token stop working, new ones come. A
 * refresh token presented again after its rotation was copied (OAuth 2.1 §4.3.1): every token of its
 * grant is revoked, the thief's and the client's alike, and the user signs in again.
 */
export async function refreshTokens(
  db: Kysely<Database>,
  client: OAuthClientRow,
  params: { refreshToken: string; scopes: Scope[] | undefined },
  at: Date,
  requestId: string,
): Promise<TokenResponse> {
  const hash = sha256Hex(params.refreshToken);
  const token = await findRefreshToken(db, hash);
  if (!token || token.client_id !== client.id || token.expires_at <= at.toISOString()) {
    throw new OAuthError('invalid_grant', 'The refresh token is unknown, revoked or expired: sign in again.');
  }
  if (token.revoked_at) await refuseReusedRefreshToken(db, token.grant_id, at);
  const granted = token.scopes as Scope[];
  const scopes = params.scopes?.length ? params.scopes : granted;
  // admin holds every scope, so an admin grant narrows to any of them.
  if (scopesNotHeld(granted, scopes).length > 0) {
    throw new OAuthError('invalid_scope', 'A refresh can narrow the granted scopes, not widen them.');
  }
  if (!(await revokeRefreshToken(db, hash, at.toISOString()))) {
    await refuseReusedRefreshToken(db, token.grant_id, at);
  }
  if (token.access_key_id) await revokeAccessKey(db, token.access_key_id, at.toISOString());
  const { response } = await issueTokens(
    db,
    {
      client,
      accountId: token.account_id,
      livemode: token.livemode === 1,
      userId: token.user_id,
      scopes,
      resource: token.resource,
      grantId: token.grant_id,
    },
    at,
    requestId,
    false,
  );
  return response;
}

async function refuseReusedRefreshToken(db: Kysely<Database>, grantId: string, at: Date): Promise<never> {
  await revokeGrant(db, grantId, at.toISOString());
  throw new OAuthError(
    'invalid_grant',
    'This refresh token was already used: every token of this sign-in is revoked. Sign in again.',
  );
}

/**
 * RFC 7009: revokes an access token (an OAuth-issued API key) or a refresh token (and the access token
 * issued with it). Unknown tokens are not an error: the answer is the same either way.
 */
export async function revokeToken(
  db: Kysely<Database>,
  client: OAuthClientRow,
  token: string,
  at: Date,
): Promise<void> {
  const hash = sha256Hex(token);
  const refresh = await findRefreshToken(db, hash);
  if (refresh && refresh.client_id === client.id) {
    await revokeRefreshToken(db, hash, at.toISOString());
    if (refresh.access_key_id) await revokeAccessKey(db, refresh.access_key_id, at.toISOString());
    return;
  }
  const key = await db
    .selectFrom('oauth_refresh_tokens')
    .innerJoin('api_keys', 'api_keys.id', 'oauth_refresh_tokens.access_key_id')
    .select('api_keys.id')
    .where('api_keys.key_hash', '=', hash)
    .where('oauth_refresh_tokens.client_id', '=', client.id)
    .executeTakeFirst();
  if (key) await revokeAccessKey(db, key.id, at.toISOString());
}

/**
 * Retention (the sweep_expired_auth job): authorization codes, refresh tokens and OAuth access tokens
 * past their expiry, device authorizations a day after theirs; none of them can be used any more.
 * Returns how many rows.
 */
export async function purgeExpiredOAuth(db: Kysely<Database>, at: Date): Promise<number> {
  const nowIso = at.toISOString();
  return (
    (await deleteExpiredGrants(db, nowIso)) +
    // A day late, as on the way in startDeviceAuthorization: a late poll still hears "expired".
    (await deleteExpiredDevices(db, new Date(at.getTime() - 86_400_000).toISOString())) +
    (await deleteExpiredKeys(db, nowIso))
  );
}

/** Read by the keys module (through the activeOAuthGrants query) for the plan's key cap. */
export { countActiveGrants } from './oauth.repository.js';
