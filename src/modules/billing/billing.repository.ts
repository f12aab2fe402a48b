import type { Kysely, Selectable } from 'kysely';
import type { AccountBillingTable, BillingSessionsTable, Database } from '../../db/schema.js';

export type AccountBillingRow = Selectable<AccountBillingTable>;
export type BillingSessionRow = Selectable<BillingSessionsTable>;

export async function billingOf(
  db: Kysely<Database>,
  accountId: string,
): Promise<AccountBillingRow | undefined> {
  return db.selectFrom('account_billing').selectAll().where('account_id', '=', accountId).executeTakeFirst();
}

export async function accountIdByCustomer(
  db: Kysely<Database>,
  customerId: string,
): Promise<string | undefined> {
  const row = await db
    .selectFrom('account_billing')
    .select('account_id')
    .where('customer_id', '=', customerId)
    .executeTakeFirst();
  return row?.account_id;
}

/** Records what the provider told about the account's customer and subscription (fields given only). */
export async function saveBilling(
  db: Kysely<Database>,
  row: Pick<AccountBillingRow, 'account_id' | 'provider' | 'updated_at'> &
    Partial<Pick<AccountBillingRow, 'customer_id' | 'subscription_id' | 'subscription_status'>>,
): Promise<void> {
  const changes = Object.fromEntries(Object.entries(row).filter(([, value]) => value !== undefined));
  await db
    .insertInto('account_billing')
    .values({ customer_id: null, subscription_id: null, subscription_status: null, ...row })
    .onConflict((oc) => oc.column('account_id').doUpdateSet(changes))
    .execute();
}

export async function insertBillingSession(db: Kysely<Database>, row: BillingSessionRow): Promise<void> {
  await db.insertInto('billing_sessions').values(row).execute();
}

export async function findBillingSession(
  db: Kysely<Database>,
  id: string,
): Promise<BillingSessionRow | undefined> {
  return db.selectFrom('billing_sessions').selectAll().where('id', '=', id).executeTakeFirst();
}

/** Marks a session used; false when another request completed it first (a double submit). */
export async function completeBillingSession(db: Kysely<Database>, id: string, at: string): Promise<boolean> {
  const result = await db
    .updateTable('billing_sessions')
    .set({ completed_at: at })
    .where('id', '=', id)
    .where('completed_at', 'is', null)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}
