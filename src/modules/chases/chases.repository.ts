import { sql, type Insertable, type Kysely, type Selectable, type Updateable } from 'kysely';
import type { ChasePlansTable, ChasesTable, Database } from '../../db/schema.js';
import { preparedInsert, preparedListQuery, preparedQuery } from '../../db/prepared.js';
import { BATCH_LOADER_MAX } from '../../lib/batch-loader.js';

export type ChaseRow = Selectable<ChasesTable>;
export type ChasePlanRow = Selectable<ChasePlansTable>;

/** Chase statuses that are final; `scheduled` is on the way (its dispatch job may be running). */
export const FINAL_CHASE_STATUSES = ['sent', 'bounced', 'failed', 'cancelled'] as const;

export async function insertChase(db: Kysely<Database>, row: Insertable<ChasesTable>): Promise<void> {
  await insertChaseRows(db, [row]);
}

// Every reminder's outcome plans the next one: compiled once for the columns a planned chase has (any
// other row is built as before), and on PostgreSQL sent with the transaction's next statement.
const insertChaseRows = preparedInsert(
  'chases',
  [
    'id',
    'account_id',
    'livemode',
    'intake_id',
    'channel',
    'trigger',
    'sequence_no',
    'attempt_no',
    'status',
    'scheduled_for',
    'sent_at',
    'recipient',
    'recipient_id',
    'message_id',
    'provider_message_id',
    'error',
    'created_at',
    'updated_at',
  ],
  { maxRows: 1, deferrable: true },
);

export async function findChase(db: Kysely<Database>, id: string): Promise<ChaseRow | undefined> {
  return db.selectFrom('chases').selectAll().where('id', '=', id).executeTakeFirst();
}

/**
 * PostgreSQL only: the chase, read once no other transaction holds its intake's row lock (lockIntake):
 * what the lock's holder committed (a call-off, the intake's deletion, a cut-off chase recorded by
 * another worker) is in what it reads. One statement, one round trip: the function of migration 0043,
 * which takes a share lock on the intake's row and lets it go at once.
 */
export async function findChaseAfterIntakeLock(
  db: Kysely<Database>,
  intakeId: string,
  chaseId: string,
): Promise<ChaseRow | undefined> {
  const { rows } =
    await sql<ChaseRow>`select * from chase_after_intake_lock(${intakeId}, ${chaseId})`.execute(db);
  return rows[0];
}

// Read by the reminders a claim took, for all of them at once: compiled once per count of ids, so that
// on SQLite the read runs directly on the connection (preparedListQuery). As many ids as a BatchLoader
// gives at once (BATCH_LOADER_MAX).
const selectChasesByIds = preparedListQuery(
  (db: Kysely<Database>, _fixed: [], ids: string[]) =>
    db.selectFrom('chases').selectAll().where('id', 'in', ids),
  [],
  BATCH_LOADER_MAX,
);
const selectPlansOf = preparedListQuery(
  (db: Kysely<Database>, _fixed: [], intakeIds: string[]) =>
    db.selectFrom('chase_plans').selectAll().where('intake_id', 'in', intakeIds),
  [],
  BATCH_LOADER_MAX,
);

/** Chases by id, in one statement (reminders dispatched together, see BatchLoader). */
export async function findChasesByIds(
  db: Kysely<Database>,
  ids: readonly string[],
): Promise<Map<string, ChaseRow>> {
  const rows = await selectChasesByIds(db, [], ids);
  return new Map(rows.map((row) => [row.id, row]));
}

/** The chase plans of these intakes, in one statement (see findChasesByIds). */
export async function findPlansOf(
  db: Kysely<Database>,
  intakeIds: readonly string[],
): Promise<Map<string, ChasePlanRow>> {
  const rows = await selectPlansOf(db, [], intakeIds);
  return new Map(rows.map((row) => [row.intake_id, row]));
}

// Read by every status read: compiled once (like the plan below).
const selectChasesOf = preparedQuery(
  (db: Kysely<Database>, intakeId: string) =>
    db.selectFrom('chases').selectAll().where('intake_id', '=', intakeId),
  [''],
);
const selectPlan = preparedQuery(
  (db: Kysely<Database>, intakeId: string) =>
    db.selectFrom('chase_plans').selectAll().where('intake_id', '=', intakeId),
  [''],
);

/** Every chase of an intake: final ones in attempt order, then the pending ones by due time. */
export async function chasesOf(db: Kysely<Database>, intakeId: string): Promise<ChaseRow[]> {
  const rows = await selectChasesOf(db, intakeId);
  return rows.sort(
    (a, b) =>
      (a.attempt_no ?? Number.MAX_SAFE_INTEGER) - (b.attempt_no ?? Number.MAX_SAFE_INTEGER) ||
      a.scheduled_for.localeCompare(b.scheduled_for) ||
      a.id.localeCompare(b.id),
  );
}

/**
 * Which reminder series a chase belongs to: null for the client's own, else an also_notify
 * recipient's id (each person has their own series).
 */
export type SeriesId = string | null;

/** Every reminder of the intake waiting to go out, whatever the series. */
export async function pendingReminders(db: Kysely<Database>, intakeId: string): Promise<ChaseRow[]> {
  return (
    db
      .selectFrom('chases')
      .selectAll()
      .where('intake_id', '=', intakeId)
      .where('trigger', '=', 'schedule')
      // `sending`: a send under way by a process of the previous release (it records the outcome).
      .where('status', 'in', ['scheduled', 'sending'])
      .orderBy('scheduled_for')
      .execute()
  );
}

/** The series' reminder waiting to go out (scheduled; its dispatch job may be running now). */
export async function pendingReminder(
  db: Kysely<Database>,
  intakeId: string,
  series: SeriesId = null,
): Promise<ChaseRow | undefined> {
  return (await pendingReminders(db, intakeId)).find((row) => (row.recipient_id ?? null) === series);
}

export async function lastSequenceNo(
  db: Kysely<Database>,
  intakeId: string,
  series: SeriesId = null,
): Promise<number> {
  const [row] =
    series === null
      ? await selectLastOfClientSeries(db, intakeId)
      : await selectLastOfRecipientSeries(db, intakeId, series);
  return Number(row?.last ?? 0);
}

// Every reminder planned reads its series' last number (an intake's creation plans the first): compiled once.
const lastSequenceNoOf = (db: Kysely<Database>, intakeId: string) =>
  db
    .selectFrom('chases')
    .select((eb) => eb.fn.max<number | null>('sequence_no').as('last'))
    .where('intake_id', '=', intakeId);
const selectLastOfClientSeries = preparedQuery(
  (db: Kysely<Database>, intakeId: string) =>
    lastSequenceNoOf(db, intakeId).where('recipient_id', 'is', null),
  [''],
);
const selectLastOfRecipientSeries = preparedQuery(
  (db: Kysely<Database>, intakeId: string, recipientId: string) =>
    lastSequenceNoOf(db, intakeId).where('recipient_id', '=', recipientId),
  ['intake', 'recipient'],
);

/** The next attempt number of the intake (call under the intake's lock). */
export async function nextAttemptNo(db: Kysely<Database>, intakeId: string): Promise<number> {
  const [row] = await selectLastAttemptNo(db, intakeId);
  return Number(row?.last ?? 0) + 1;
}

const selectLastAttemptNo = preparedQuery(
  (db: Kysely<Database>, intakeId: string) =>
    db
      .selectFrom('chases')
      .select((eb) => eb.fn.max<number | null>('attempt_no').as('last'))
      .where('intake_id', '=', intakeId),
  [''],
);

/**
 * Changes a chase that is still scheduled: its outcome recorded by its dispatch job (the one sender),
 * a new due time, or a call-off. Fenced on `scheduled`: a chase already settled is not changed;
 * returns whether it was.
 */
export async function settleChase(
  db: Kysely<Database>,
  id: string,
  patch: Updateable<ChasesTable>,
): Promise<boolean> {
  const result = await db
    .updateTable('chases')
    .set(patch)
    .where('id', '=', id)
    .where('status', '=', 'scheduled')
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** What a dispatched chase's outcome writes on its row (recordChaseOutcome). */
export type ChaseAttemptOutcome = Pick<
  ChaseRow,
  'status' | 'sent_at' | 'recipient' | 'message_id' | 'provider_message_id' | 'error' | 'updated_at'
>;

/**
 * Records a scheduled chase's outcome (settleChase) with the intake's next attempt number, in one
 * statement (call under the intake's lock), and reads back that number and the last sequence number
 * of the chase's series (what planning its next reminder starts from). Undefined when the chase was
 * no longer scheduled.
 */
export async function settleChaseAttempt(
  db: Kysely<Database>,
  chase: Pick<ChaseRow, 'id' | 'intake_id' | 'recipient_id'>,
  outcome: ChaseAttemptOutcome,
): Promise<{ attemptNo: number; lastSequenceNo: number } | undefined> {
  const [row] = await settleAttemptStatement(
    db,
    outcome.status,
    outcome.sent_at,
    outcome.recipient,
    outcome.message_id,
    outcome.provider_message_id,
    outcome.error,
    outcome.updated_at,
    chase.intake_id,
    chase.id,
    chase.intake_id,
    chase.recipient_id ?? null,
  );
  if (!row) return undefined;
  return { attemptNo: Number(row.attempt_no), lastSequenceNo: Number(row.last_sequence_no ?? 0) };
}

// settleChaseAttempt's statement: every reminder's outcome runs it, so it is compiled once. The series
// is the client's (no recipient) or an also_notify recipient's: `is not distinct from` matches both.
const settleAttemptStatement = preparedQuery(
  (
    db: Kysely<Database>,
    status: string,
    sentAt: string | null,
    recipient: string | null,
    messageId: string | null,
    providerMessageId: string | null,
    error: string | null,
    updatedAt: string,
    intakeId: string,
    id: string,
    sameIntakeId: string,
    recipientId: string | null,
  ) =>
    db
      .updateTable('chases')
      .set((eb) => ({
        status: status as ChaseRow['status'],
        sent_at: sentAt,
        recipient,
        message_id: messageId,
        provider_message_id: providerMessageId,
        error,
        updated_at: updatedAt,
        attempt_no: eb
          .selectFrom('chases as earlier')
          .select(sql<number>`coalesce(max(earlier.attempt_no), 0) + 1`.as('next'))
          .where('earlier.intake_id', '=', intakeId),
      }))
      .where('id', '=', id)
      .where('status', '=', sql.lit('scheduled'))
      .returning((eb) => [
        'attempt_no',
        eb
          .selectFrom('chases as same')
          .select((inner) => inner.fn.max<number | null>('same.sequence_no').as('last'))
          .where('same.intake_id', '=', sameIntakeId)
          .where(sql<boolean>`same.recipient_id is not distinct from ${recipientId}`)
          .as('last_sequence_no'),
      ]),
  ['status', 'sent', 'to', 'message', 'provider', 'error', 'at', 'intake', 'id', 'same', 'recipient'],
);

/** Removes a still-scheduled chase (replaced by a re-plan); whether it was removed. */
export async function deleteScheduledChase(db: Kysely<Database>, id: string): Promise<boolean> {
  const result = await db
    .deleteFrom('chases')
    .where('id', '=', id)
    .where('status', '=', 'scheduled')
    .executeTakeFirst();
  return result.numDeletedRows > 0n;
}

export async function updateChase(
  db: Kysely<Database>,
  id: string,
  patch: Updateable<ChasesTable>,
): Promise<void> {
  await db.updateTable('chases').set(patch).where('id', '=', id).execute();
}

export async function findPlan(db: Kysely<Database>, intakeId: string): Promise<ChasePlanRow | undefined> {
  const [plan] = await selectPlan(db, intakeId);
  return plan;
}

// Written by every intake's creation: compiled once for the columns a creation gives.
const insertPlanRows = preparedInsert(
  'chase_plans',
  [
    'intake_id',
    'account_id',
    'livemode',
    'interval_minutes',
    'max_reminders',
    'respect_quiet_hours',
    'chase_at_time',
    'opted_out_at',
    'stalled_at',
    'thanked_at',
    'created_at',
    'updated_at',
  ],
  { maxRows: 1, skipIfExists: 'intake_id' },
);

/** Stores an intake's chase plan; an intake that has one keeps it. */
export async function insertPlan(db: Kysely<Database>, row: Insertable<ChasePlansTable>): Promise<void> {
  await insertPlanRows(db, [row]);
}

export async function updatePlan(
  db: Kysely<Database>,
  intakeId: string,
  patch: Updateable<ChasePlansTable>,
): Promise<void> {
  await db.updateTable('chase_plans').set(patch).where('intake_id', '=', intakeId).execute();
}

export async function deleteChaseRows(db: Kysely<Database>, intakeId: string): Promise<void> {
  await db.deleteFrom('chases').where('intake_id', '=', intakeId).execute();
  await db.deleteFrom('chase_plans').where('intake_id', '=', intakeId).execute();
}
