import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';

/**
 * A person left the account: the OAuth grants and device sign-ins they approved end with them, in the
 * removal's transaction. Refresh tokens are revoked, unused authorization codes spent, and device
 * authorizations they approved but no device has collected yet are denied. The API keys these issued
 * (access tokens, device keys) record the person and are revoked by the keys module.
 */
export async function endGrantsOfPerson(
  db: Kysely<Database>,
  person: { accountId: string; userId: string; at: string },
): Promise<void> {
  await db
    .updateTable('oauth_refresh_tokens')
    .set({ revoked_at: person.at })
    .where('account_id', '=', person.accountId)
    .where('user_id', '=', person.userId)
    .where('revoked_at', 'is', null)
    .execute();
  await db
    .updateTable('oauth_codes')
    .set({ used_at: person.at })
    .where('account_id', '=', person.accountId)
    .where('user_id', '=', person.userId)
    .where('used_at', 'is', null)
    .execute();
  await db
    .updateTable('device_authorizations')
    .set({ status: 'denied' })
    .where('account_id', '=', person.accountId)
    .where('user_id', '=', person.userId)
    .where('status', '=', 'approved')
    .execute();
}
