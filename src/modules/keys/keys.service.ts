import type { Kysely } from 'kysely';
import type { z } from 'zod';
import type { Database } from '../../db/schema.js';
import { scopesNotHeld } from '../../domain/scopes.js';
import type { AuthContext } from '../../http/auth.js';
import { ApiError, notFound } from '../../http/errors.js';
import { newId } from '../../lib/ids.js';
import { ask } from '../../kernel/domain-events.js';
import { auditInTransaction } from '../audit/audit.scope.js';
import { generateApiKey, type KeyMode } from './keys.domain.js';
import { planOf } from '../../domain/plans.js';
import {
  accountPlan,
  countLastingKeys,
  insertKey,
  listKeys,
  lockAccountKeys,
  revokeKey,
  type ApiKeyRow,
} from './keys.repository.js';
import type { ApiKey, CreatedApiKey } from './keys.schemas.js';

export function toApiKey(row: ApiKeyRow): z.infer<typeof ApiKey> {
  return {
    id: row.id,
    name: row.name,
    mode: row.livemode === 1 ? 'live' : 'test',
    scopes: row.scopes,
    prefix: row.prefix,
    created_at: row.created_at,
    last_used_at: row.last_used_at,
  };
}

declare module '../../kernel/domain-events.js' {
  interface DomainQueryMap {
    /** The account's OAuth sign-ins still able to mint access tokens (refresh-token grants not revoked or expired). */
    activeOAuthGrants: { input: { accountId: string; at: string }; output: number };
  }
}

/**
 * Every key has its own rate limit, so the plan caps how many lasting credentials an account holds
 * (`max_api_keys`, both modes): lasting keys, and OAuth sign-ins, each of which mints a new hour-long
 * access token whenever it likes (one at a time: a refresh revokes the previous token). Minting keys or
 * signing in again does not multiply the plan's requests per hour. The access tokens themselves are
 * not counted apart: they are their sign-in's. 402 plan_required beyond it, as for webhook endpoints.
 * Call inside the creating transaction: the account's row is locked, so two creations cannot both pass.
 */
export async function assertPlanAllowsAnotherKey(
  db: Kysely<Database>,
  accountId: string,
  at: string,
): Promise<void> {
  await lockAccountKeys(db, accountId);
  const plan = planOf((await accountPlan(db, accountId)) ?? 'free');
  const limit = plan.features.max_api_keys;
  const used =
    (await countLastingKeys(db, accountId)) + (await ask(db, 'activeOAuthGrants', { accountId, at }));
  if (used >= limit) {
    throw new ApiError(
      'plan_required',
      `The ${plan.name} plan allows ${limit} API keys and agent sign-ins (live and test together), and ${used} exist; revoke one or upgrade the plan.`,
      { limit },
    );
  }
}

/**
 * Creates a key and returns it with its secret: the only time the secret is ever seen. A lasting key
 * (no expiry) counts against the plan's `max_api_keys`; an expiring one (an OAuth access token) is its
 * sign-in's, which counted when it began.
 */
export async function createKey(
  db: Kysely<Database>,
  owner: { accountId: string; createdByKeyId: string | null; createdByUserId?: string | null; at: string },
  request: { name: string; mode: KeyMode; scopes: string[]; expiresAt?: string },
): Promise<z.infer<typeof CreatedApiKey>> {
  if (request.expiresAt === undefined) await assertPlanAllowsAnotherKey(db, owner.accountId, owner.at);
  const generated = generateApiKey(request.mode);
  const row: ApiKeyRow = {
    id: newId('key'),
    account_id: owner.accountId,
    livemode: request.mode === 'live' ? 1 : 0,
    name: request.name,
    scopes: [...new Set(request.scopes)],
    prefix: generated.prefix,
    key_hash: generated.hash,
    created_by_key_id: owner.createdByKeyId,
    created_at: owner.at,
    last_used_at: null,
    revoked_at: null,
    expires_at: request.expiresAt ?? null,
    created_by_user_id: owner.createdByUserId ?? null,
  };
  await insertKey(db, row);
  const { last_used_at: _unused, ...shown } = toApiKey(row);
  return { ...shown, key: generated.secret };
}

/**
 * A key creates keys with at most its own scopes, and a test key only test keys:
 * test keys are handed to development environments and must not mint live access.
 */
export async function createKeyAs(
  db: Kysely<Database>,
  auth: AuthContext,
  request: { name: string; mode: KeyMode | undefined; scopes: string[] },
): Promise<z.infer<typeof CreatedApiKey>> {
  const mode = request.mode ?? (auth.livemode ? 'live' : 'test');
  if (!auth.livemode && mode === 'live') {
    throw new ApiError('forbidden', 'A test-mode key cannot create live keys: use a live admin key.');
  }
  const missing = scopesNotHeld(auth.scopes, request.scopes);
  if (missing.length > 0) {
    throw new ApiError(
      'forbidden',
      `scopes: a key can grant only scopes it holds; this key lacks ${missing.join(', ')}.`,
    );
  }
  return db.transaction().execute(async (trx) => {
    const created = await createKey(
      trx,
      {
        accountId: auth.account.id,
        createdByKeyId: auth.keyId,
        // A dashboard user's key is theirs; a key made with a key belongs to that key's person.
        createdByUserId: auth.person?.id ?? null,
        at: auth.clock.now().toISOString(),
      },
      { name: request.name, mode, scopes: request.scopes },
    );
    await auditInTransaction(trx, created.id);
    return created;
  });
}

export async function listKeysAs(db: Kysely<Database>, auth: AuthContext): Promise<z.infer<typeof ApiKey>[]> {
  const rows = await listKeys(db, auth.account.id, !auth.livemode);
  return rows.map(toApiKey);
}

export async function revokeKeyAs(db: Kysely<Database>, auth: AuthContext, keyId: string): Promise<void> {
  await db.transaction().execute(async (trx) => {
    const at = auth.clock.now().toISOString();
    const revoked = await revokeKey(trx, auth.account.id, keyId, !auth.livemode, at);
    if (!revoked) throw notFound('api_key', keyId);
    await auditInTransaction(trx);
  });
}

/** Read and written by other modules through this module's surface (the rows are this module's). */
export {
  deleteExpiredKeys,
  findActiveKeyByHash,
  keyNameOf,
  listKeys,
  revokeKeysOfPerson,
} from './keys.repository.js';
