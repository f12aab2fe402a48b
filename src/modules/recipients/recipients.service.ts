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
import {
  ensurePlan,
  seriesOf,
  startSeries,
  syncSeries,
  cancelPending,
  type Series,
} from '../chases/chases.plan.js';
import { findPlan, updatePlan } from '../chases/chases.repository.js';
import { findIntake, itemsOf, lockIntake, type IntakeRow } from '../intakes/intakes.repository.js';
import type { World } from '../../kernel/world.js';
import { liftSuppression } from '../notify/notify.repository.js';
import { deliverQueuedSoon, tenantOf } from '../notify/notify.service.js';
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
type NewRecipient = z.output<typeof RecipientInput>;

async function requireIntake(db: Kysely<Database>, world: World, id: string): Promise<IntakeRow> {
  const intake = await findIntake(db, world, id);
  if (!intake) throw notFound('intake', id);
  return intake;
}

/** 422 when the list repeats an address or names the client's: each person is there once. */
export function checkAlsoNotify(clientEmail: string, list: readonly NewRecipient[]): void {
  const seen = new Set([clientEmail.toLowerCase()]);
  for (const [index, person] of list.entries()) {
    const email = person.email.toLowerCase();
    if (seen.has(email)) {
      throw new ApiError(
        'unprocessable',
        `also_notify[${index}].email: ${email} is already a recipient of this intake (the client or an earlier entry).`,
      );
    }
    seen.add(email);
  }
}

/** Stores the also_notify list of a new intake, in its creating transaction (before it is sent). */
export async function insertAlsoNotify(
  trx: Kysely<Database>,
  world: World,
  intakeId: string,
  list: readonly NewRecipient[],
  firstPosition = 0,
): Promise<void> {
  const at = world.clock.now().toISOString();
  await insertRecipients(
    trx,
    list.map((person, index) => ({
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
    })),
  );
}

/** Every recipient as the caller sees them: the client first, then the others in the order added. */
export async function recipientRecords(
  db: Kysely<Database>,
  world: World,
  intake: IntakeRow,
  /** The intake's also_notify rows, when the caller has them already. */
  knownRecipients?: readonly RecipientRow[],
): Promise<RecipientRecord[]> {
  const [plan, others] = await Promise.all([
    findPlan(db, intake.id),
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
      opted_out_at: plan?.opted_out_at ?? null,
      suppressed: suppressed.has(intake.client_email.toLowerCase()),
      stalled_at: plan?.stalled_at ?? null,
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
    const intake = (await lockIntake(trx, found.id)) ?? found;
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
    if (!INVITING.has(intake.status)) return;
    const plan = await ensurePlan(trx, world, intake);
    const person = (await seriesOf(trx, intake, plan)).find((p) => p.email === email);
    if (person) await startSeries(trx, world, intake, plan, person, world.clock.now().getTime());
  });
  await deliverQueuedSoon(services, world, found.id);
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
    const intake = (await lockIntake(trx, found.id)) ?? found;
    if (email.toLowerCase() === intake.client_email) {
      throw new ApiError(
        'conflict',
        'The client cannot be removed from their intake; remove also_notify recipients only.',
      );
    }
    const recipient = await findRecipient(trx, intake.id, email);
    if (!recipient) throw notFound('recipient', email);
    await cancelPending(trx, world, intake.id, 'recipient_removed', recipient.id);
    await deleteRecipient(trx, recipient.id);
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
    const intake = (await lockIntake(trx, found.id)) ?? found;
    const plan = await findPlan(trx, intake.id);
    const person: Series | undefined = (await seriesOf(trx, intake, plan)).find((p) => p.email === address);
    if (!person) throw new ApiError('not_found', `${email} is not a recipient of intake ${intake.id}.`);
    await liftSuppression(trx, tenantOf(world), address);
    const at = world.clock.now().toISOString();
    if (person.stalled) {
      if (person.id === null) await updatePlan(trx, intake.id, { stalled_at: null, updated_at: at });
      else await updateRecipient(trx, person.id, { stalled_at: null, updated_at: at });
    }
    await syncSeries(trx, world, intake, await itemsOf(trx, intake.id), await findPlan(trx, intake.id), {
      ...person,
      stalled: false,
    });
  });
  return recordOf(db, world, found.id, address);
}

export { anonymizeRecipients, deleteRecipientsOf, recipientsOf } from './recipients.repository.js';
