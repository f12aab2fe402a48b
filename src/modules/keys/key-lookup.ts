import type { Db } from '../../db/database.js';
import { cachedReader } from '../../db/read-cache.js';
import { andThen, type MaybePromise } from '../../lib/maybe-promise.js';
import type { ApiKeyStore } from '../../http/auth.js';
import { API_KEY_PATTERN, hashApiKey } from './keys.domain.js';
import { findActiveKeyByHash, touchKey, type AccountRow, type ApiKeyRow } from './keys.repository.js';

export interface FoundKey {
  readonly key: Readonly<ApiKeyRow>;
  readonly account: Readonly<AccountRow>;
  /** The role of the person who made the key (null: the account holder's own key). */
  readonly personRole: string | null;
  /**
   * The account's answer version, read in the key's statement (PostgreSQL, where a key is read afresh
   * for every request): before anything else the request reads, so kept answers may be checked against
   * it. A key kept between requests (SQLite) has none: its version would be that of an earlier request.
   */
  readonly answerVersion: number | undefined;
}

/** Expiry is checked on every use (below), so the row is read and kept whatever its expiry. */
const EVERY_EXPIRY = new Date(0);

const readKey = cachedReader<FoundKey>(
  async (db, hash) => {
    const found = await findActiveKeyByHash(db.kysely, hash, EVERY_EXPIRY);
    if (!found) return undefined;
    // Shared by the requests that use the key until it changes: nobody may change it.
    return Object.freeze({
      key: Object.freeze(found.key),
      account: Object.freeze(found.account),
      personRole: found.personRole,
      answerVersion: found.answerVersion,
    });
  },
  // The key, its account and its maker's role are rows of the key's account: kept past others' commits.
  { ofValue: (found) => found.account.id },
);

/**
 * The key lookup every authenticated request makes: the active, unexpired key with this hash and its
 * account, as of `at`. Kept in memory between commits where the database allows, and past commits that
 * change nothing of the key's account (see cachedReader): a revoked key, a changed plan or rate limit,
 * a member's new role and an advanced test clock are seen by the very next request.
 */
export function findKeyForRequest(db: Db, hash: string, at: Date): MaybePromise<FoundKey | undefined> {
  return andThen(readKey(db, hash), (found) => {
    const expiresAt = found?.key.expires_at ?? null;
    return expiresAt !== null && expiresAt <= at.toISOString() ? undefined : found;
  });
}

/** The API key store the authentication hook reads (see ApiKeyStore in the HTTP layer). */
export function apiKeyStore(db: Db): ApiKeyStore {
  return {
    isKeyShaped: (token) => API_KEY_PATTERN.test(token),
    find: (token, at) => findKeyForRequest(db, hashApiKey(token), at),
    touch: (keyId, at) => touchKey(db.kysely, keyId, at.toISOString()),
  };
}
