import type { Insertable, Kysely, Selectable, Updateable } from 'kysely';
import type { Database, MessagesTable } from '../../db/schema.js';

export type MessageRow = Selectable<MessagesTable>;

/** Statuses a message ends in. pending and sending are on the way. */
export const FINAL_MESSAGE_STATUSES = ['captured', 'dropped', 'sent', 'bounced', 'failed'] as const;

export interface Tenant {
  accountId: string;
  livemode: boolean;
}

export async function insertMessage(db: Kysely<Database>, row: Insertable<MessagesTable>): Promise<void> {
  await db.insertInto('messages').values(row).execute();
}

export async function findMessage(db: Kysely<Database>, id: string): Promise<MessageRow | undefined> {
  return db.selectFrom('messages').selectAll().where('id', '=', id).executeTakeFirst();
}

/**
 * Claims a pending message for sending until `leaseUntil` (real epoch ms). Exactly one caller gets
 * true: the worker's job and an immediate delivery after the request may race for it.
 */
export async function claimMessage(db: Kysely<Database>, id: string, leaseUntil: number): Promise<boolean> {
  const result = await db
    .updateTable('messages')
    .set((eb) => ({
      status: 'sending',
      locked_until: leaseUntil,
      send_attempts: eb('send_attempts', '+', 1),
    }))
    .where('id', '=', id)
    .where('status', '=', 'pending')
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** Records a claimed message's outcome, only while the claim is still ours. */
export async function settleMessage(
  db: Kysely<Database>,
  id: string,
  leaseUntil: number,
  patch: Updateable<MessagesTable>,
): Promise<boolean> {
  const result = await db
    .updateTable('messages')
    .set({ ...patch, locked_until: null })
    .where('id', '=', id)
    .where('status', '=', 'sending')
    .where('locked_until', '=', leaseUntil)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

export async function updateMessage(
  db: Kysely<Database>,
  id: string,
  patch: Updateable<MessagesTable>,
): Promise<void> {
  await db.updateTable('messages').set(patch).where('id', '=', id).execute();
}

export async function pendingMessageIds(db: Kysely<Database>, intakeId: string): Promise<string[]> {
  const rows = await db
    .selectFrom('messages')
    .select('id')
    .where('intake_id', '=', intakeId)
    .where('status', '=', 'pending')
    .orderBy('created_at')
    .execute();
  return rows.map((r) => r.id);
}

/** An intake's messages a sender holds right now (claimed, lease running, outcome not yet recorded). */
export async function sendingMessageIds(
  db: Kysely<Database>,
  intakeId: string,
  realNowMs: number,
): Promise<string[]> {
  const rows = await db
    .selectFrom('messages')
    .select('id')
    .where('intake_id', '=', intakeId)
    .where('status', '=', 'sending')
    .where('locked_until', '>=', realNowMs)
    .execute();
  return rows.map((r) => r.id);
}

/** The test inbox: what test mode captured (email) or dropped (SMS), newest first. */
export async function outboxMessages(
  db: Kysely<Database>,
  tenant: Tenant,
  filter: { intakeId?: string | undefined; limit: number },
): Promise<MessageRow[]> {
  let query = db
    .selectFrom('messages')
    .selectAll()
    .where('account_id', '=', tenant.accountId)
    .where('livemode', '=', tenant.livemode ? 1 : 0)
    .where('status', 'in', ['captured', 'dropped']);
  if (filter.intakeId) query = query.where('intake_id', '=', filter.intakeId);
  return query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(filter.limit).execute();
}

export async function isSuppressed(db: Kysely<Database>, tenant: Tenant, address: string): Promise<boolean> {
  const row = await db
    .selectFrom('suppressions')
    .select('address')
    .where('account_id', '=', tenant.accountId)
    .where('livemode', '=', tenant.livemode ? 1 : 0)
    .where('address', '=', address.toLowerCase())
    .executeTakeFirst();
  return row !== undefined;
}

/** Suppresses an address for the account and mode; a second report changes nothing. */
export async function suppressAddress(
  db: Kysely<Database>,
  tenant: Tenant,
  entry: { address: string; reason: string; messageId: string | null; at: string },
): Promise<void> {
  await db
    .insertInto('suppressions')
    .values({
      account_id: tenant.accountId,
      livemode: tenant.livemode ? 1 : 0,
      address: entry.address.toLowerCase(),
      reason: entry.reason,
      message_id: entry.messageId,
      created_at: entry.at,
    })
    .onConflict((oc) => oc.columns(['account_id', 'livemode', 'address']).doNothing())
    .execute();
}

export async function liftSuppression(
  db: Kysely<Database>,
  tenant: Tenant,
  address: string,
): Promise<number> {
  const result = await db
    .deleteFrom('suppressions')
    .where('account_id', '=', tenant.accountId)
    .where('livemode', '=', tenant.livemode ? 1 : 0)
    .where('address', '=', address.toLowerCase())
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

export async function deleteMessagesOfIntake(db: Kysely<Database>, intakeId: string): Promise<void> {
  await db.deleteFrom('messages').where('intake_id', '=', intakeId).execute();
}
