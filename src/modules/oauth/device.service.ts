import { effectiveScopes } from '../../domain/roles.js';
import { personRole } from '../sessions/members.service.js';
import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import {
  devicePollOutcome,
  formatUserCode,
  USER_CODE_ALPHABET,
  USER_CODE_LENGTH,
} from '../../domain/oauth.js';
import type { Scope } from '../../domain/scopes.js';
import { sha256Hex } from '../../lib/secrets.js';
import { insertAuditEntry } from '../audit/audit.service.js';
import { createKey } from '../keys/keys.service.js';
import {
  deleteExpiredDevices,
  findDeviceByCode,
  insertDeviceAuthorization,
  recordDevicePoll,
  updateDevice,
} from './oauth.repository.js';
import { OAuthError, secretToken, type Grant, type TokenResponse } from './oauth.service.js';

/**
 * The device authorization grant (RFC 8628): a command-line tool or the stdio MCP server asks for a
 * code, a signed-in user approves it in the dashboard (device.pages.ts), and the tool's next poll gets
 * an API key with the scopes the user chose. The key is a plain API key (no expiry): it lives on the
 * user's machine, in a file only they can read, until revoked.
 */

export const DEVICE_CODE_TTL_MS = 10 * 60 * 1000;
export const DEVICE_POLL_INTERVAL_SECONDS = 5;

/** The device flow's public clients: no registration, known by name on the approval page. */
export const DEVICE_CLIENTS: Record<string, string> = {
  'intake-cli': 'Intake CLI',
  'intake-mcp': 'Intake MCP server (stdio)',
};

function newUserCode(): string {
  const bytes = randomBytes(USER_CODE_LENGTH * 2);
  let code = '';
  for (const byte of bytes) {
    // 240 = 12 × 20: rejecting bytes above it keeps every letter equally likely.
    if (byte >= 240) continue;
    code += USER_CODE_ALPHABET[byte % USER_CODE_ALPHABET.length];
    if (code.length === USER_CODE_LENGTH) return code;
  }
  return newUserCode();
}

export async function startDeviceAuthorization(
  db: Kysely<Database>,
  request: { clientName: string; scopes: Scope[] },
  at: Date,
  verificationUri: string,
) {
  // Housekeeping on the way: authorizations that expired a day ago are worth nothing to anyone.
  await deleteExpiredDevices(db, new Date(at.getTime() - 24 * 60 * 60 * 1000).toISOString());
  const deviceCode = secretToken('odc');
  const userCode = newUserCode();
  await insertDeviceAuthorization(db, {
    device_code_hash: sha256Hex(deviceCode),
    user_code: userCode,
    client_name: request.clientName,
    requested_scopes: request.scopes,
    status: 'pending',
    account_id: null,
    livemode: null,
    user_id: null,
    scopes: null,
    interval_seconds: DEVICE_POLL_INTERVAL_SECONDS,
    last_polled_ms: null,
    created_at: at.toISOString(),
    expires_at: new Date(at.getTime() + DEVICE_CODE_TTL_MS).toISOString(),
  });
  const shown = formatUserCode(userCode);
  return {
    device_code: deviceCode,
    user_code: shown,
    verification_uri: verificationUri,
    verification_uri_complete: `${verificationUri}?user_code=${shown}`,
    expires_in: DEVICE_CODE_TTL_MS / 1000,
    interval: DEVICE_POLL_INTERVAL_SECONDS,
  };
}

/** One poll of the device's token request: an error to keep waiting (or stop), or its API key. */
export async function pollDeviceAuthorization(
  db: Kysely<Database>,
  deviceCode: string,
  at: Date,
  requestId: string,
): Promise<TokenResponse & { key_id: string; mode: 'live' | 'test' }> {
  const hash = sha256Hex(deviceCode);
  const row = await findDeviceByCode(db, hash);
  if (!row) throw new OAuthError('invalid_grant', 'Unknown device_code.');
  const nowMs = at.getTime();
  const outcome = devicePollOutcome(
    {
      status: row.status,
      expiresAtMs: Date.parse(row.expires_at),
      intervalSeconds: row.interval_seconds,
      lastPolledMs: row.last_polled_ms === null ? null : Number(row.last_polled_ms),
    },
    nowMs,
  );
  if (outcome.kind === 'slow_down') {
    await recordDevicePoll(db, hash, { last_polled_ms: nowMs, interval_seconds: outcome.intervalSeconds });
    throw new OAuthError(
      'slow_down',
      `Polling too fast: wait ${outcome.intervalSeconds} seconds between requests.`,
    );
  }
  await recordDevicePoll(db, hash, { last_polled_ms: nowMs });
  if (outcome.kind === 'error') throw new OAuthError(outcome.error, deviceErrorText[outcome.error]);
  const { account_id: accountId, user_id: userId, scopes, livemode } = row;
  if (!accountId || !userId || !scopes || livemode === null) {
    throw new OAuthError('invalid_grant', 'The device authorization is incomplete.');
  }
  return db.transaction().execute(async (trx) => {
    // Of two polls racing past approval, one gets the key.
    if (!(await updateDevice(trx, hash, 'approved', { status: 'consumed' }))) {
      throw new OAuthError('invalid_grant', 'This device code was already used.');
    }
    const mode = livemode === 1 ? 'live' : 'test';
    // Never more than the approving person's role allows today; nothing once they have left.
    const role = await personRole(trx, accountId, userId);
    if (!role)
      throw new OAuthError('access_denied', 'The person who approved this device is no longer a member.');
    const key = await createKey(
      trx,
      // The key records the person who approved it: it never holds more than their role, and ends with them.
      { accountId, createdByKeyId: null, createdByUserId: userId, at: at.toISOString() },
      {
        name: `${row.client_name} (device sign-in)`.slice(0, 200),
        mode,
        scopes: effectiveScopes(scopes, role),
      },
    );
    await insertAuditEntry(trx, {
      account_id: accountId,
      livemode,
      action: 'oauth.device_key_issued',
      resource_type: 'api_key',
      resource_id: key.id,
      actor_type: 'user',
      actor_id: userId,
      request_id: requestId,
      created_at: at.toISOString(),
    });
    return {
      access_token: key.key,
      token_type: 'Bearer' as const,
      scope: key.scopes.join(' '),
      key_id: key.id,
      mode,
    };
  });
}

const deviceErrorText = {
  authorization_pending: 'Waiting for the user to approve the code in the dashboard.',
  access_denied: 'The user denied the request.',
  expired_token: 'The device code expired: start again.',
  invalid_grant: 'This device code was already used.',
} as const;

/** A signed-in user's answer to a device's request, with the scopes and world they chose. */
export async function decideDeviceAuthorization(
  db: Kysely<Database>,
  userCode: string,
  decision: { approve: false } | ({ approve: true } & Grant),
  at: Date,
): Promise<boolean> {
  const row = await db
    .selectFrom('device_authorizations')
    .select(['device_code_hash', 'expires_at'])
    .where('user_code', '=', userCode)
    .where('status', '=', 'pending')
    .executeTakeFirst();
  if (!row || row.expires_at <= at.toISOString()) return false;
  if (!decision.approve) return updateDevice(db, row.device_code_hash, 'pending', { status: 'denied' });
  return updateDevice(db, row.device_code_hash, 'pending', {
    status: 'approved',
    account_id: decision.accountId,
    livemode: decision.livemode ? 1 : 0,
    user_id: decision.userId,
    scopes: decision.scopes,
  });
}
