/**
 * Recipients: the client plus up to ten also_notify people. Each gets their own emails (one message
 * per person, so nobody sees the other addresses), their own reminder series and opt-out link.
 * Reinstating an address lifts its bounce suppression and resumes that person's reminders.
 */
import type { Kysely } from 'kysely';
import type { z } from 'zod';
import type { Database } from '../../db/schema.js';
import { ApiError, notFound } from '../../http/errors.js';
import { newId } from '../../lib/ids.js';
import type { AppServices } from '../../services.js';
import { auditInTransaction } from '../audit/audit.scope.js';
import { ask, raise } from '../../kernel/domain-events.js';
import { findIntake, lockIntake } from '../intakes/intakes.service.js';
import type { IntakeRow } from '../intakes/intakes.repository.js';
import type { World } from '../../kernel/world.js';
import { sendQueuedMessages, liftSuppression, tenantOf } from '../notify/notify.service.js';
import {
  deleteRecipient,
  findRecipient,
  insertRecipients,
  recipientsOf,
  suppressedAmong,
  updateRecipient,
  type RecipientRow,
} from './recipients.repository.js';
import { MAX_RECIPIENTS, type Recipient, type RecipientInput } from '../intakes/people.schemas.js';

type RecipientRecord = z.infer<typeof Recipient>;

declare module '../../kernel/domain-events.js' {
  interface DomainEventMap {
    /** A person was added to an intake that is out: they get the portal link and their reminders. */
    recipientInvited: { world: World; intake: IntakeRow; email: string };
    /** A person is about to be removed: their pending reminder is called off. */
    recipientRemoved: { world: World; intakeId: string; recipientId: string };
    /** An address may be written to again (client or recipient): their reminders resume when owed. */
    recipientReinstated: { world: World; intake: IntakeRow; email: string };
  }
  interface DomainQueryMap {
    /** The client's own reminder state (the others' is on their recipient rows). */
    clientReminderState: {
      input: { intakeId: string };
      output: { optedOutAt: string | null; stalledAt: string | null };
    };
  }
}
type NewRecipient = z.output<typeof RecipientInput>;

async function requireIntake(db: Kysely<Database>, world: World, id: string): Promise<IntakeRow> {
  const intake = await findIntake(db, world, id);
  if (!intake) throw notFound('intake', id);
  return intake;
}

/** Stores the also_notify list of a new intake, in its creating transaction, and answers the rows written. */
export async function insertAlsoNotify(
  trx: Kysely<Database>,
  world: World,
  intakeId: string,
  list: readonly NewRecipient[],
  firstPosition = 0,
): Promise<RecipientRow[]> {
  const at = world.clock.now().toISOString();
  const rows = list.map((person, index): RecipientRow => ({
    id: newId('rcp'),
    account_id: world.accountId,
    livemode: world.livemode ? 1 : 0,
    intake_id: intakeId,
    email: person.email.toLowerCase(),
    name: person.name ?? null,
    position: firstPosition + index,
    opted_out_at: null,
    stalled_at: null,
    created_at: at,
    updated_at: at,
  }));
  await insertRecipients(trx, rows);
  return rows;
}

/** Every recipient as the caller sees them: the client first, then the others in the order added. */
export async function recipientRecords(
  db: Kysely<Database>,
  world: World,
  intake: IntakeRow,
  /** The intake's also_notify rows, when the caller has them already. */
  knownRecipients?: readonly RecipientRow[],
): Promise<RecipientRecord[]> {
  const [client, others] = await Promise.all([
    ask(db, 'clientReminderState', { intakeId: intake.id }),
    knownRecipients ?? recipientsOf(db, intake.id),
  ]);
  const suppressed = await suppressedAmong(db, tenantOf(world), [
    intake.client_email,
    ...others.map((r) => r.email),
  ]);
  return [
    {
      email: intake.client_email,
      name: intake.client_name,
      role: 'client' as const,
      opted_out_at: client.optedOutAt,
      suppressed: suppressed.has(intake.client_email.toLowerCase()),
      stalled_at: client.stalledAt,
      added_at: intake.created_at,
    },
    ...others.map((r) => ({
      email: r.email,
      name: r.name,
      role: 'also_notify' as const,
      opted_out_at: r.opted_out_at,
      suppressed: suppressed.has(r.email),
      stalled_at: r.stalled_at,
      added_at: r.created_at,
    })),
  ];
}

async function recordOf(db: Kysely<Database>, world: World, intakeId: string, email: string) {
  const intake = await requireIntake(db, world, intakeId);
  const record = (await recipientRecords(db, world, intake)).find((r) => r.email === email.toLowerCase());
  if (!record) throw new ApiError('not_found', `${email} is not a recipient of intake ${intake.id}.`);
  return record;
}

/** Statuses in which a new person is sent the portal link at once (before: at sending; after: never). */
const INVITING = new Set(['sent', 'in_progress']);

/** POST /v1/intakes/:id/recipients: one more person, invited now when the intake is out. */
export async function addRecipient(
  services: AppServices,
  world: World,
  id: string,
  body: NewRecipient,
): Promise<RecipientRecord> {
  const db = services.db.kysely;
  const found = await requireIntake(db, world, id);
  const email = body.email.toLowerCase();
  await db.transaction().execute(async (trx) => {
    const intake = await lockIntake(trx, found.id);
    // Deleted since it was looked up: nothing is left to change.
    if (!intake) throw notFound('intake', found.id);
    if (intake.status === 'archived') throw new ApiError('conflict', 'The intake is archived.');
    const others = await recipientsOf(trx, intake.id);
    if (email === intake.client_email || others.some((r) => r.email === email)) {
      throw new ApiError('conflict', `${email} is already a recipient of intake ${intake.id}.`);
    }
    if (others.length >= MAX_RECIPIENTS) {
      throw new ApiError(
        'unprocessable',
        `An intake has at most ${MAX_RECIPIENTS} recipients besides the client; remove one first.`,
      );
    }
    const next = Math.max(-1, ...others.map((r) => r.position)) + 1;
    await insertAlsoNotify(trx, world, intake.id, [body], next);
    if (INVITING.has(intake.status)) await raise(trx, 'recipientInvited', { world, intake, email });
    await auditInTransaction(trx);
  });
  await sendQueuedMessages(services, world, found.id);
  return recordOf(db, world, found.id, email);
}

/** DELETE /v1/intakes/:id/recipients/:email: their pending reminder is called off; the client stays. */
export async function removeRecipient(
  services: AppServices,
  world: World,
  id: string,
  email: string,
): Promise<void> {
  const db = services.db.kysely;
  const found = await requireIntake(db, world, id);
  await db.transaction().execute(async (trx) => {
    const intake = await lockIntake(trx, found.id);
    // Deleted since it was looked up: nothing is left to change.
    if (!intake) throw notFound('intake', found.id);
    if (email.toLowerCase() === intake.client_email) {
      throw new ApiError(
        'conflict',
        'The client cannot be removed from their intake; remove also_notify recipients only.',
      );
    }
    const recipient = await findRecipient(trx, intake.id, email);
    if (!recipient) throw notFound('recipient', email);
    await raise(trx, 'recipientRemoved', { world, intakeId: intake.id, recipientId: recipient.id });
    await deleteRecipient(trx, recipient.id);
    await auditInTransaction(trx);
  });
}

/**
 * POST /v1/intakes/:id/recipients/:email/reinstate: after a wrong bounce (or spam report) the address
 * is no longer suppressed, and the person's reminders resume when something is owed.
 */
export async function reinstateRecipient(
  services: AppServices,
  world: World,
  id: string,
  email: string,
): Promise<RecipientRecord> {
  const db = services.db.kysely;
  const found = await requireIntake(db, world, id);
  const address = email.toLowerCase();
  await db.transaction().execute(async (trx) => {
    const intake = await lockIntake(trx, found.id);
    // Deleted since it was looked up: nothing is left to change.
    if (!intake) throw notFound('intake', found.id);
    const recipient =
      address === intake.client_email ? undefined : await findRecipient(trx, intake.id, address);
    if (address !== intake.client_email && !recipient) {
      throw new ApiError('not_found', `${email} is not a recipient of intake ${intake.id}.`);
    }
    await liftSuppression(trx, tenantOf(world), address);
    if (recipient?.stalled_at) {
      await updateRecipient(trx, recipient.id, {
        stalled_at: null,
        updated_at: world.clock.now().toISOString(),
      });
    }
    await raise(trx, 'recipientReinstated', { world, intake, email: address });
    await auditInTransaction(trx);
  });
  return recordOf(db, world, found.id, address);
}

/** Three reminder emails in a row bounced: this person's series stops until reinstated. */
export async function markRecipientStalled(
  trx: Kysely<Database>,
  recipientId: string,
  at: string,
): Promise<void> {
  await updateRecipient(trx, recipientId, { stalled_at: at, updated_at: at });
}

/** The person used their opt-out link: no more reminders to them. */
export async function markRecipientOptedOut(
  trx: Kysely<Database>,
  recipientId: string,
  at: string,
): Promise<void> {
  await updateRecipient(trx, recipientId, { opted_out_at: at, updated_at: at });
}

/** What other modules read of recipients (their rows are this module's). */
export {
  anonymizeRecipients,
  deleteRecipientsOf,
  findRecipientById,
  recipientsOf,
  type RecipientRow,
} from './recipients.repository.js';
