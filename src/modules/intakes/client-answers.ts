/**
 * What the client's portal writes on an intake's rows, as named operations (the rows are this
 * module's; the portal decides when, these say what changes). All run in the caller's transaction,
 * under the intake's lock.
 */
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import type { ItemStatus } from '../../domain/intake-state.js';
import { updateIntake, updateItem, type IntakeRow } from './intakes.repository.js';

/** The client opened the portal: last seen now, first viewed now if never before. */
export async function recordClientVisit(trx: Kysely<Database>, intake: IntakeRow, at: string): Promise<void> {
  await updateIntake(trx, intake.id, {
    client_last_seen_at: at,
    ...(intake.client_first_viewed_at ? {} : { client_first_viewed_at: at }),
  });
}

/** A saved (not yet sent) answer: a value, or a secret already sealed. */
export type SavedAnswer = { value: unknown } | { sealedSecret: string };

/** The client saved an answer to an item (not sent yet). */
export async function recordSavedAnswer(
  trx: Kysely<Database>,
  intakeId: string,
  key: string,
  answer: SavedAnswer,
  at: string,
): Promise<void> {
  await updateItem(
    trx,
    intakeId,
    key,
    'sealedSecret' in answer
      ? { secret_ciphertext: answer.sealedSecret, saved_at: at }
      : { value: answer.value, saved_at: at },
  );
}

/** The client changed an item's files (one added or removed): its answer changed now. */
export async function recordAnswerChanged(
  trx: Kysely<Database>,
  intakeId: string,
  key: string,
  at: string,
): Promise<void> {
  await updateItem(trx, intakeId, key, { saved_at: at });
}

/** A client's change moved the item to another status (a submission emptied goes back to pending). */
export async function moveItemAfterClientChange(
  trx: Kysely<Database>,
  intakeId: string,
  key: string,
  status: ItemStatus,
): Promise<void> {
  await updateItem(trx, intakeId, key, { status });
}

/**
 * The client sent an item: submitted now, awaiting a new review (the previous reviewer's note no
 * longer applies); a secret sent again is revealed once more.
 */
export async function recordItemSubmitted(
  trx: Kysely<Database>,
  intakeId: string,
  key: string,
  options: { at: string; secret: boolean },
): Promise<void> {
  await updateItem(trx, intakeId, key, {
    status: 'submitted',
    submitted_at: options.at,
    review_note: null,
    ...(options.secret ? { secret_revealed_at: null } : {}),
  });
}
