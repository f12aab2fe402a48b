import { sql, type Kysely, type Transaction } from 'kysely';
import type { Database } from '../db/schema.js';
import { canonicalJson, sha256Hex } from '../lib/secrets.js';
import { ApiError } from './errors.js';

/** How long an Idempotency-Key is remembered (CONTRACT: 24 hours). */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

export interface IdempotencyScope {
  apiKeyId: string;
  accountId: string;
  livemode: boolean;
}

export interface IdempotentOutcome<T> {
  /** true: this request created the resource (answer 201); false: a replay of the original (200). */
  created: boolean;
  value: T;
}

export interface IdempotentCreate<T> {
  resourceType: string;
  /** Creates the resource inside the transaction that also records the key; returns its id and answer. */
  create(trx: Transaction<Database>): Promise<{ id: string; value: T }>;
  /** Loads the answer for an existing resource (a replay, or the conflict's `resource`). */
  load(id: string): Promise<T>;
}

export function validateIdempotencyKey(raw: string | string[] | undefined): string | undefined {
  if (raw === undefined) return undefined;
  const key = Array.isArray(raw) ? raw[0] : raw;
  if (key === undefined || !KEY_PATTERN.test(key)) {
    throw new ApiError(
      'invalid_request',
      'Idempotency-Key must be 1 to 255 visible ASCII characters (a UUID is recommended).',
    );
  }
  return key;
}

/**
 * Runs `create` at most once per (API key, Idempotency-Key) within 24 hours.
 *
 * The key row and the resource are written in one transaction, so a crash leaves neither. A concurrent
 * request with the same key blocks on the row's unique index (PostgreSQL) or on the write lock (SQLite)
 * until the first commits, then sees the committed row and replays it. Same key with another body: 409.
 */
export async function idempotentCreate<T>(
  db: Kysely<Database>,
  scope: IdempotencyScope,
  idempotencyKey: string | undefined,
  requestBody: unknown,
  now: Date,
  op: IdempotentCreate<T>,
): Promise<IdempotentOutcome<T>> {
  if (idempotencyKey === undefined) {
    const { value } = await db.transaction().execute((trx) => op.create(trx));
    return { created: true, value };
  }
  const requestHash = sha256Hex(canonicalJson(requestBody));
  const createdAt = now.toISOString();
  const expiredBefore = new Date(now.getTime() - IDEMPOTENCY_TTL_MS).toISOString();

  const fresh = await db.transaction().execute(async (trx) => {
    await trx
      .deleteFrom('idempotency_keys')
      .where('api_key_id', '=', scope.apiKeyId)
      .where('idem_key', '=', idempotencyKey)
      .where('created_at', '<', expiredBefore)
      .execute();
    const claimed = await trx
      .insertInto('idempotency_keys')
      .values({
        api_key_id: scope.apiKeyId,
        idem_key: idempotencyKey,
        account_id: scope.accountId,
        livemode: scope.livemode ? 1 : 0,
        request_hash: requestHash,
        resource_type: op.resourceType,
        resource_id: null,
        created_at: createdAt,
      })
      .onConflict((oc) => oc.columns(['api_key_id', 'idem_key']).doNothing())
      .executeTakeFirst();
    if (Number(claimed.numInsertedOrUpdatedRows ?? 0n) === 0) return undefined;
    const result = await op.create(trx);
    await trx
      .updateTable('idempotency_keys')
      .set({ resource_id: result.id })
      .where('api_key_id', '=', scope.apiKeyId)
      .where('idem_key', '=', idempotencyKey)
      .execute();
    return result;
  });
  if (fresh) return { created: true, value: fresh.value };

  const existing = await db
    .selectFrom('idempotency_keys')
    .select(['request_hash', 'resource_id', 'resource_type'])
    .where('api_key_id', '=', scope.apiKeyId)
    .where('idem_key', '=', idempotencyKey)
    .executeTakeFirst();
  if (!existing?.resource_id) {
    throw new ApiError(
      'conflict',
      'A request with this Idempotency-Key is still being processed; retry shortly.',
    );
  }
  const original = await op.load(existing.resource_id);
  if (existing.request_hash !== requestHash || existing.resource_type !== op.resourceType) {
    throw new ApiError(
      'conflict',
      'This Idempotency-Key was already used with a different request body; the existing resource is in `resource`.',
      { resource: original },
    );
  }
  return { created: false, value: original };
}

/** Expired keys deleted per statement by the sweep: each a short write, however many have expired. */
const SWEEP_BATCH = 500;

/**
 * Retention (the sweep_idempotency_keys job): deletes the keys remembered longer than
 * IDEMPOTENCY_TTL_MS before `now`, which a request may use again anyway, oldest first, a batch to a
 * statement, by the keys' index of their age (migration 0049). Returns how many.
 */
export async function purgeExpiredIdempotencyKeys(db: Kysely<Database>, now: Date): Promise<number> {
  const expiredBefore = new Date(now.getTime() - IDEMPOTENCY_TTL_MS).toISOString();
  let purged = 0;
  for (;;) {
    const result = await sql`delete from idempotency_keys where (api_key_id, idem_key) in (
        select api_key_id, idem_key from idempotency_keys where created_at < ${expiredBefore}
        order by created_at limit ${SWEEP_BATCH})`.execute(db);
    const deleted = Number(result.numAffectedRows ?? 0n);
    purged += deleted;
    if (deleted < SWEEP_BATCH) return purged;
  }
}
