import type { Kysely } from 'kysely';
import type { z } from 'zod';
import type { Database } from '../../db/schema.js';
import { planOf, rateLimitFor } from '../../domain/plans.js';
import type { AuthContext } from '../../http/auth.js';
import { ApiError } from '../../http/errors.js';
import type { Clock } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import { auditInTransaction } from '../audit/audit.scope.js';
import type { AccountRow } from '../keys/keys.repository.js';
import { createKey } from '../keys/keys.service.js';
import { brandingSettingsOf, updateBranding } from './branding.js';
import type { Account, CreateAccountInput, PatchAccountBody } from './accounts.schemas.js';

export function toAccount(
  row: AccountRow,
  livemode: boolean,
  branding: z.infer<typeof Account>['branding'] = { logo_url: null, accent_color: null },
): z.infer<typeof Account> {
  return {
    id: row.id,
    name: row.name,
    email: row.email,
    plan: row.plan as z.infer<typeof Account>['plan'],
    default_language: row.default_language,
    rate_limit_per_hour: rateLimitFor(row),
    livemode,
    created_at: row.created_at,
    branding,
  };
}

export interface CreatedAccount {
  account_id: string;
  live_key: string;
  test_key: string;
}

/** An account with its first two admin keys, one live and one test (the CLI's `accounts create`). */
export async function createAccount(
  db: Kysely<Database>,
  input: z.output<typeof CreateAccountInput>,
  at: string,
): Promise<CreatedAccount> {
  return db.transaction().execute(async (trx) => {
    const existing = await trx
      .selectFrom('accounts')
      .select('id')
      .where('email', '=', input.email)
      .executeTakeFirst();
    if (existing) throw new ApiError('conflict', `An account with the email ${input.email} already exists.`);
    const accountId = newId('acct');
    await trx
      .insertInto('accounts')
      .values({
        id: accountId,
        name: input.name ?? input.email,
        email: input.email,
        plan: input.plan,
        default_language: 'en',
        rate_limit_per_hour: input.rateLimitPerHour ?? null,
        created_at: at,
      })
      .execute();
    // The account's email is its first dashboard user (a person may belong to other accounts too).
    await trx
      .insertInto('account_users')
      .values({
        id: newId('mem'),
        account_id: accountId,
        email: input.email.toLowerCase(),
        role: 'owner',
        invited_by_user_id: null,
        created_at: at,
        last_signed_in_at: null,
        name: null,
        status: 'active',
      })
      .execute();
    const owner = { accountId, createdByKeyId: null, at };
    const live = await createKey(trx, owner, { name: 'Default live key', mode: 'live', scopes: ['admin'] });
    const test = await createKey(trx, owner, { name: 'Default test key', mode: 'test', scopes: ['admin'] });
    return { account_id: accountId, live_key: live.key, test_key: test.key };
  });
}

export async function updateAccount(
  db: Kysely<Database>,
  clock: Clock,
  auth: AuthContext,
  patch: z.output<typeof PatchAccountBody>,
): Promise<z.infer<typeof Account>> {
  const { branding, ...fields } = patch;
  if (branding) {
    const setsSomething = Boolean(branding.logo_url) || Boolean(branding.accent_color);
    if (setsSomething && !planOf(auth.account.plan).features.custom_branding) {
      throw new ApiError(
        'plan_required',
        `Custom portal branding is not part of the ${planOf(auth.account.plan).name} plan.`,
      );
    }
  }
  const changes = Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined));
  // One patch, one change: a failed second write must not leave the first one applied.
  await db.transaction().execute(async (trx) => {
    if (branding) await updateBranding(trx, auth.account.id, branding, clock.now().toISOString());
    if (Object.keys(changes).length > 0) {
      await trx.updateTable('accounts').set(changes).where('id', '=', auth.account.id).execute();
    }
    await auditInTransaction(trx);
  });
  const row = await db
    .selectFrom('accounts')
    .selectAll()
    .where('id', '=', auth.account.id)
    .executeTakeFirstOrThrow();
  return toAccount(row, auth.livemode, await brandingSettingsOf(db, auth.account.id));
}

/** Sets or clears (null) an account's contract rate limit. Returns false when no account has that id or email. */
export async function setRateLimitOverride(
  db: Kysely<Database>,
  accountIdOrEmail: string,
  perHour: number | null,
): Promise<boolean> {
  const result = await db
    .updateTable('accounts')
    .set({ rate_limit_per_hour: perHour })
    .where((eb) => eb.or([eb('id', '=', accountIdOrEmail), eb('email', '=', accountIdOrEmail)]))
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** An account's row (name, address, language…), for modules that write to its people. */
export async function accountOf(db: Kysely<Database>, accountId: string): Promise<AccountRow | undefined> {
  return db.selectFrom('accounts').selectAll().where('id', '=', accountId).executeTakeFirst();
}
