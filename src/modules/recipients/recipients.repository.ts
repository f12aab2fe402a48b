import type { Insertable, Kysely, Selectable, Updateable } from 'kysely';
import type { Database, IntakeRecipientsTable } from '../../db/schema.js';
import { preparedListQuery, preparedQuery } from '../../db/prepared.js';

export type RecipientRow = Selectable<IntakeRecipientsTable>;

/** The intake's also_notify recipients, in the order they were added. */
export async function recipientsOf(db: Kysely<Database>, intakeId: string): Promise<RecipientRow[]> {
  return selectRecipientsOf(db, intakeId);
}

// Read by every intake and status read: compiled once.
const selectRecipientsOf = preparedQuery(
  (db: Kysely<Database>, intakeId: string) =>
    db.selectFrom('intake_recipients').selectAll().where('intake_id', '=', intakeId).orderBy('position'),
  [''],
);

export async function findRecipient(
  db: Kysely<Database>,
  intakeId: string,
  email: string,
): Promise<RecipientRow | undefined> {
  return db
    .selectFrom('intake_recipients')
    .selectAll()
    .where('intake_id', '=', intakeId)
    .where('email', '=', email.toLowerCase())
    .executeTakeFirst();
}

export async function findRecipientById(
  db: Kysely<Database>,
  intakeId: string,
  id: string,
): Promise<RecipientRow | undefined> {
  return db
    .selectFrom('intake_recipients')
    .selectAll()
    .where('intake_id', '=', intakeId)
    .where('id', '=', id)
    .executeTakeFirst();
}

export async function insertRecipients(
  db: Kysely<Database>,
  rows: Insertable<IntakeRecipientsTable>[],
): Promise<void> {
  if (rows.length > 0) await db.insertInto('intake_recipients').values(rows).execute();
}

export async function updateRecipient(
  db: Kysely<Database>,
  id: string,
  patch: Updateable<IntakeRecipientsTable>,
): Promise<void> {
  await db.updateTable('intake_recipients').set(patch).where('id', '=', id).execute();
}

export async function deleteRecipient(db: Kysely<Database>, id: string): Promise<void> {
  await db.deleteFrom('intake_recipients').where('id', '=', id).execute();
}

export async function deleteRecipientsOf(db: Kysely<Database>, intakeId: string): Promise<void> {
  await db.deleteFrom('intake_recipients').where('intake_id', '=', intakeId).execute();
}

/** The addresses among `emails` that are suppressed for the account and mode (one query). */
export async function suppressedAmong(
  db: Kysely<Database>,
  tenant: { accountId: string; livemode: boolean },
  emails: readonly string[],
): Promise<Set<string>> {
  if (emails.length === 0) return new Set();
  const addresses = emails.map((e) => e.toLowerCase());
  const livemode = tenant.livemode ? 1 : 0;
  const rows = await selectSuppressedAmong(db, [tenant.accountId, livemode], addresses);
  return new Set(rows.map((r) => r.address));
}

/** The suppression read of an intake's recipients (a few addresses), compiled once per count, 8 at most. */
const selectSuppressedAmong = preparedListQuery(
  (db: Kysely<Database>, [accountId, livemode]: [string, number], addresses: string[]) =>
    db
      .selectFrom('suppressions')
      .select('address')
      .where('account_id', '=', accountId)
      .where('livemode', '=', livemode)
      .where('address', 'in', addresses),
  ['account', 0],
  8,
);

/**
 * Retention with anonymize: the other recipients' identities go with the client's (a one-way hash
 * keeps each address distinct, so the chase history still tells the people apart).
 */
export async function anonymizeRecipients(
  db: Kysely<Database>,
  intakeId: string,
  anonymized: (email: string) => string,
): Promise<void> {
  for (const row of await recipientsOf(db, intakeId)) {
    await updateRecipient(db, row.id, { email: anonymized(row.email), name: null });
  }
}
