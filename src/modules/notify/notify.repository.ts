import type { Insertable, Kysely, Selectable, Updateable } from 'kysely';
import { z } from 'zod';
import type { Database, MessagesTable } from '../../db/schema.js';
import { preparedInsert, preparedQuery } from '../../db/prepared.js';

export type MessageRow = Selectable<MessagesTable>;

/** Statuses a message ends in; pending is on the way. */
export const FINAL_MESSAGE_STATUSES = ['captured', 'dropped', 'sent', 'bounced', 'failed'] as const;

export interface Tenant {
  accountId: string;
  livemode: boolean;
}

export async function insertMessage(db: Kysely<Database>, row: Insertable<MessagesTable>): Promise<void> {
  await insertMessageRows(db, [row]);
}

// Every email and reminder writes one: compiled once for the columns every caller gives (any other row
// is built as before), and on PostgreSQL sent with the transaction's next statement.
const insertMessageRows = preparedInsert(
  'messages',
  [
    'id',
    'account_id',
    'livemode',
    'intake_id',
    'chase_id',
    'channel',
    'template',
    'data',
    'to_address',
    'subject',
    'text_body',
    'html_body',
    'status',
    'provider_message_id',
    'error',
    'created_at',
    'sent_at',
  ],
  { maxRows: 1, deferrable: true },
);

/**
 * What a message's template needs beyond the intake (the `data` column, JSON): a revision's item and
 * note; recipient_name when it goes to an also_notify recipient rather than the client (null: no name);
 * unsubscribe_url for a prepared email that carries an opt-out.
 * Other keys are kept as they are.
 */
const MessageDataSchema = z.looseObject({
  item_key: z.string().optional(),
  note: z.string().optional(),
  recipient_name: z.string().nullable().optional(),
  /** A prepared email to the client: its one-click opt-out (List-Unsubscribe), as reminders have. */
  unsubscribe_url: z.string().optional(),
});
export type MessageData = z.infer<typeof MessageDataSchema>;

/** A message row with its data parsed. */
export type Message = Omit<MessageRow, 'data'> & { data: MessageData };

function parseMessageData(text: string): MessageData {
  const parsed = MessageDataSchema.safeParse(JSON.parse(text));
  return parsed.success ? parsed.data : {};
}

export async function findMessage(db: Kysely<Database>, id: string): Promise<Message | undefined> {
  const [row] = await selectMessage(db, id);
  return row && { ...row, data: parseMessageData(row.data) };
}

// Every message's send starts with this read: compiled once.
const selectMessage = preparedQuery(
  (db: Kysely<Database>, id: string) => db.selectFrom('messages').selectAll().where('id', '=', id),
  [''],
);

/**
 * Records the outcome of a pending message's send (the caller holds its job, the one sender). Fenced
 * on `pending`: a message already settled (or deleted with its intake) is not changed; returns
 * whether it was.
 */
export async function settleMessage(
  db: Kysely<Database>,
  id: string,
  patch: Updateable<MessagesTable>,
): Promise<boolean> {
  const result = await db
    .updateTable('messages')
    .set(patch)
    .where('id', '=', id)
    .where('status', '=', 'pending')
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

// Every message sent and every reminder checks its address: compiled once.
const selectSuppression = preparedQuery(
  (db: Kysely<Database>, accountId: string, livemode: number, address: string) =>
    db
      .selectFrom('suppressions')
      .select('address')
      .where('account_id', '=', accountId)
      .where('livemode', '=', livemode)
      .where('address', '=', address),
  ['account', 0, 'address'],
);

export async function isSuppressed(db: Kysely<Database>, tenant: Tenant, address: string): Promise<boolean> {
  const rows = await selectSuppression(db, tenant.accountId, tenant.livemode ? 1 : 0, address.toLowerCase());
  return rows.length > 0;
}

/** Which of these addresses (lower-cased) are suppressed for the account and mode, in one statement. */
export async function suppressedAmong(
  db: Kysely<Database>,
  tenant: Tenant,
  addresses: readonly string[],
): Promise<Set<string>> {
  const rows = await db
    .selectFrom('suppressions')
    .select('address')
    .where('account_id', '=', tenant.accountId)
    .where('livemode', '=', tenant.livemode ? 1 : 0)
    .where(
      'address',
      'in',
      addresses.map((address) => address.toLowerCase()),
    )
    .execute();
  return new Set(rows.map((row) => row.address));
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
