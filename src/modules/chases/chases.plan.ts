/**
 * Reminder series planning: an intake's chase settings, its first reminder when sent, and keeping the
 * one pending reminder in step with the intake (cancel when nothing is owed, resume when something is).
 * Everything here runs inside the caller's transaction.
 */
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import {
  CHASE_SCHEDULES,
  DEFAULT_MAX_REMINDERS,
  isTimeZone,
  nextReminder,
  reminderStopReason,
  type ChaseItem,
  type ChaseScheduleName,
  type ChaseSettings,
} from '../../domain/chases.js';
import { cancelJobs, enqueueJob, jobIdsOf } from '../../jobs/jobs.js';
import { newId } from '../../lib/ids.js';
import { chasePlanValues, type ChasePlanValues, type ChaseSettingsInput } from '../intakes/chase-settings.js';
import { clientItems, itemsOf, type IntakeRow, type ItemRow } from '../intakes/intakes.service.js';
import { realTimeOf, type World } from '../../kernel/world.js';
import { deleteMessagesOfIntake } from '../notify/notify.service.js';
import { queueEmail } from '../notify/notify.service.js';
import { DISPATCH_CHASE, chaseSubject } from './chases.jobs.js';
import {
  deleteChaseRows,
  deleteScheduledChase,
  insertChase,
  findPlan,
  insertPlan,
  lastSequenceNo,
  nextAttemptNo,
  pendingReminder,
  pendingReminders,
  settleChase,
  updatePlan,
  type ChasePlanRow,
  type SeriesId,
} from './chases.repository.js';
import { deleteRecipientsOf, recipientsOf, type RecipientRow } from '../recipients/recipients.service.js';

export function settingsOf(intake: IntakeRow, plan: ChasePlanRow | undefined): ChaseSettings {
  const schedule = (CHASE_SCHEDULES as readonly string[]).includes(intake.chase_schedule)
    ? (intake.chase_schedule as ChaseScheduleName)
    : 'default';
  return {
    schedule,
    intervalMinutes: plan?.interval_minutes ?? null,
    maxReminders: plan?.max_reminders ?? DEFAULT_MAX_REMINDERS,
    respectQuietHours: plan ? plan.respect_quiet_hours === 1 : true,
    chaseAtTime: plan?.chase_at_time ?? null,
    timeZone: intake.client_timezone && isTimeZone(intake.client_timezone) ? intake.client_timezone : null,
  };
}

export function chaseItems(rows: readonly ItemRow[]): ChaseItem[] {
  return clientItems(rows).map((row) => ({
    key: row.key,
    required: row.definition.required,
    status: row.status,
  }));
}

/**
 * Stores an intake's chase settings (at creation, in its transaction) and answers the row written, its
 * defaults included. An intake that has a plan already keeps it: only a new intake may use the answer.
 */
export async function createChasePlan(
  trx: Kysely<Database>,
  world: World,
  intakeId: string,
  values: ChasePlanValues,
): Promise<ChasePlanRow> {
  const at = world.clock.now().toISOString();
  const row = {
    intake_id: intakeId,
    account_id: world.accountId,
    livemode: world.livemode ? 1 : 0,
    ...values,
    opted_out_at: null,
    stalled_at: null,
    thanked_at: null,
    created_at: at,
    updated_at: at,
  };
  await insertPlan(trx, row);
  return { ...row, bounce_next: 0, overdue_fired_for: null };
}

export async function ensurePlan(
  trx: Kysely<Database>,
  world: World,
  intake: IntakeRow,
): Promise<ChasePlanRow | undefined> {
  const found = await findPlan(trx, intake.id);
  if (found) return found;
  await createChasePlan(trx, world, intake.id, chasePlanValues({ chase_schedule: 'default' }, 'free'));
  return findPlan(trx, intake.id);
}

// ---- series: one per person ----

/** One person's reminder series: the client's own (id null) or an also_notify recipient's. */
export interface Series {
  id: SeriesId;
  email: string;
  name: string | null;
  optedOut: boolean;
  stalled: boolean;
}

/** Every person who gets the intake's emails, the client first, each with their series state. */
export async function seriesOf(
  db: Kysely<Database>,
  intake: IntakeRow,
  plan: ChasePlanRow | undefined,
): Promise<Series[]> {
  return seriesFrom(intake, plan, await recipientsOf(db, intake.id));
}

/** seriesOf, from the intake's also_notify rows when the caller has them (it has just written them). */
function seriesFrom(
  intake: IntakeRow,
  plan: ChasePlanRow | undefined,
  recipients: readonly RecipientRow[],
): Series[] {
  const client: Series = {
    id: null,
    email: intake.client_email,
    name: intake.client_name,
    optedOut: Boolean(plan?.opted_out_at),
    stalled: Boolean(plan?.stalled_at),
  };
  const others = recipients.map((r) => ({
    id: r.id,
    email: r.email,
    name: r.name,
    optedOut: Boolean(r.opted_out_at),
    stalled: Boolean(r.stalled_at),
  }));
  return [client, ...others];
}

/** Why a person's scheduled reminders must not go out now, or null when they may. */
export function seriesStopReason(intake: IntakeRow, items: readonly ItemRow[], series: Series) {
  return reminderStopReason({
    intakeStatus: intake.status,
    items: chaseItems(items),
    optedOut: series.optedOut,
    stalled: series.stalled,
  });
}

/** Queues one email of the intake to every person (one message each: nobody sees the others). */
export async function queueEmailToAll(
  trx: Kysely<Database>,
  world: World,
  intake: IntakeRow,
  template: 'invitation' | 'items_added' | 'revision' | 'completed',
  data: Record<string, unknown> = {},
): Promise<boolean> {
  let queued = false;
  for (const person of await seriesOf(trx, intake, await findPlan(trx, intake.id))) {
    const to = person.id === null ? undefined : { email: person.email, name: person.name };
    if ((await queueEmail(trx, world, intake, template, data, to)) !== null) queued = true;
  }
  return queued;
}

// ---- planning ----

/** Plans the series' next reminder: a scheduled chase row and its job, in the caller's transaction. */
export async function planNextReminder(
  trx: Kysely<Database>,
  world: World,
  intake: IntakeRow,
  settings: ChaseSettings,
  options: {
    nowMs: number;
    resuming: boolean;
    series?: SeriesId;
    /** The series' last sequence number, when the caller read it under the intake's lock already. */
    lastSequenceNo?: number;
  },
): Promise<void> {
  if (!intake.sent_at) return;
  const series = options.series ?? null;
  const last = options.lastSequenceNo ?? (await lastSequenceNo(trx, intake.id, series));
  const next = nextReminder({
    settings,
    sentAtMs: Date.parse(intake.sent_at),
    lastSequenceNo: last,
    nowMs: options.nowMs,
    resuming: options.resuming && last > 0,
  });
  if (!next) return;
  const id = newId('ch');
  const at = new Date(next.atMs).toISOString();
  const created = world.clock.now().toISOString();
  await insertChase(trx, {
    id,
    account_id: world.accountId,
    livemode: world.livemode ? 1 : 0,
    intake_id: intake.id,
    channel: 'email',
    trigger: 'schedule',
    sequence_no: next.sequenceNo,
    attempt_no: null,
    status: 'scheduled',
    scheduled_for: at,
    sent_at: null,
    recipient: null,
    recipient_id: series,
    message_id: null,
    provider_message_id: null,
    error: null,
    created_at: created,
    updated_at: created,
  });
  await enqueueJob(trx, {
    accountId: world.accountId,
    livemode: world.livemode,
    kind: DISPATCH_CHASE,
    subjectId: chaseSubject(intake.id, id),
    payload: { chase_id: id },
    dueAt: realTimeOf(world, next.atMs),
  });
}

/**
 * Cancels a scheduled chase's dispatch job unless a sender runs it right now; whether the chase is
 * free to call off. A running dispatch records its own outcome (and plans what follows), so it is
 * left alone, as a send on the wire cannot be called back.
 */
async function callOffDispatch(trx: Kysely<Database>, intakeId: string, chaseId: string): Promise<boolean> {
  const subject = { subjectId: chaseSubject(intakeId, chaseId), kind: DISPATCH_CHASE };
  await cancelJobs(trx, { ...subject, idleOnly: true });
  return (await jobIdsOf(trx, subject)).length === 0;
}

/** Calls off the pending reminder of one person's series, or of every series when none is named. */
export async function cancelPending(
  trx: Kysely<Database>,
  world: World,
  intakeId: string,
  reason: string,
  series?: SeriesId,
): Promise<void> {
  const pending = (await pendingReminders(trx, intakeId)).filter(
    (row) => series === undefined || (row.recipient_id ?? null) === series,
  );
  for (const row of pending) {
    if (!(await callOffDispatch(trx, intakeId, row.id))) continue;
    await settleChase(trx, row.id, {
      status: 'cancelled',
      attempt_no: await nextAttemptNo(trx, intakeId),
      error: reason,
      updated_at: world.clock.now().toISOString(),
    });
  }
}

/**
 * When a draft is sent (POST /send): the portal-link email and the first reminder of every person's
 * series, in the sending transaction.
 */
export async function onIntakeSent(trx: Kysely<Database>, world: World, intake: IntakeRow): Promise<void> {
  const plan = await ensurePlan(trx, world, intake);
  await startEverySeries(trx, world, intake, plan, await seriesOf(trx, intake, plan));
}

/** What an intake's creation has just written, so that starting its series reads none of it back. */
export interface NewIntakeRows {
  plan: ChasePlanRow;
  recipients: readonly RecipientRow[];
  items: readonly ItemRow[];
}

/**
 * An intake created sent: as onIntakeSent, from the rows its creation has just written (no reminder
 * can precede the first).
 */
export async function startNewIntake(
  trx: Kysely<Database>,
  world: World,
  intake: IntakeRow,
  written: NewIntakeRows,
): Promise<void> {
  await startEverySeries(
    trx,
    world,
    intake,
    written.plan,
    seriesFrom(intake, written.plan, written.recipients),
    {
      items: written.items,
      lastSequenceNo: 0,
    },
  );
}

async function startEverySeries(
  trx: Kysely<Database>,
  world: World,
  intake: IntakeRow,
  plan: ChasePlanRow | undefined,
  people: readonly Series[],
  known?: KnownAtStart,
): Promise<void> {
  const sentAt = intake.sent_at ? Date.parse(intake.sent_at) : world.clock.now().getTime();
  for (const person of people) await startSeries(trx, world, intake, plan, person, sentAt, known);
}

/** The intake's items and the series' last reminder number, when the caller knows them. */
interface KnownAtStart {
  items: readonly ItemRow[];
  lastSequenceNo: number;
}

/** One person's invitation and the first reminder of their series (at sending, or when added later). */
export async function startSeries(
  trx: Kysely<Database>,
  world: World,
  intake: IntakeRow,
  plan: ChasePlanRow | undefined,
  person: Series,
  nowMs: number,
  known?: KnownAtStart,
): Promise<void> {
  const to = person.id === null ? undefined : { email: person.email, name: person.name };
  await queueEmail(trx, world, intake, 'invitation', {}, to);
  if (seriesStopReason(intake, known?.items ?? (await itemsOf(trx, intake.id)), person)) return;
  await planNextReminder(trx, world, intake, settingsOf(intake, plan), {
    nowMs,
    resuming: false,
    series: person.id,
    ...(known ? { lastSequenceNo: known.lastSequenceNo } : {}),
  });
}

/**
 * After any change to an intake's items or status (inside that change's transaction, from
 * settleIntake): cancels the pending reminder once the client owes nothing or the intake is closed,
 * starts the series again when something is owed again, and thanks the client at completion.
 */
export async function syncChases(
  trx: Kysely<Database>,
  world: World,
  intake: IntakeRow,
  items: readonly ItemRow[],
  previousStatus: string,
): Promise<void> {
  const plan = await findPlan(trx, intake.id);
  for (const person of await seriesOf(trx, intake, plan)) {
    await syncSeries(trx, world, intake, items, plan, person);
  }
  if (intake.status === 'completed' && previousStatus !== 'completed' && !plan?.thanked_at) {
    await queueEmailToAll(trx, world, intake, 'completed');
    const ensured = plan ?? (await ensurePlan(trx, world, intake));
    if (ensured) await updatePlan(trx, intake.id, { thanked_at: world.clock.now().toISOString() });
  }
}

/** Keeps one person's pending reminder in step: cancelled when they must not be reminded, planned when owed. */
export async function syncSeries(
  trx: Kysely<Database>,
  world: World,
  intake: IntakeRow,
  items: readonly ItemRow[],
  plan: ChasePlanRow | undefined,
  person: Series,
): Promise<void> {
  const stop = seriesStopReason(intake, items, person);
  const pending = await pendingReminder(trx, intake.id, person.id);
  if (stop && pending) await cancelPending(trx, world, intake.id, stop, person.id);
  if (!stop && !pending && intake.sent_at) {
    await planNextReminder(trx, world, intake, settingsOf(intake, plan), {
      nowMs: world.clock.now().getTime(),
      resuming: true,
      series: person.id,
    });
  }
}

/** Archive: the pending reminder is cancelled (in the archiving transaction). */
export async function stopChases(trx: Kysely<Database>, world: World, intakeId: string): Promise<void> {
  await cancelPending(trx, world, intakeId, 'archived');
}

/** Delete: every chase, plan, message and recipient of the intake goes (its jobs go with the intake's). */
export async function deleteChaseData(trx: Kysely<Database>, intakeId: string): Promise<void> {
  await deleteChaseRows(trx, intakeId);
  await deleteMessagesOfIntake(trx, intakeId);
  await deleteRecipientsOf(trx, intakeId);
}

/** Queues the email telling the client about new items or a revision; whether one was queued. */
export async function notifyClient(
  trx: Kysely<Database>,
  world: World,
  intake: IntakeRow,
  template: 'items_added' | 'revision',
  data: Record<string, unknown> = {},
): Promise<boolean> {
  if (intake.status === 'draft' || intake.status === 'archived') return false;
  return queueEmailToAll(trx, world, intake, template, data);
}

/**
 * New chase settings for an intake (PATCH /v1/intakes/:id, in its transaction, after the intake row
 * carries the new chase_schedule and client time zone): the pending reminder is re-planned from now.
 */
export async function replanChases(
  trx: Kysely<Database>,
  world: World,
  intake: IntakeRow,
  input: ChaseSettingsInput,
  planId: string,
): Promise<void> {
  const values = chasePlanValues({ ...input, chase_schedule: intake.chase_schedule }, planId);
  await ensurePlan(trx, world, intake);
  await updatePlan(trx, intake.id, { ...values, updated_at: world.clock.now().toISOString() });
  // Pending reminders are replaced, not called off: they leave no trace in the status object.
  for (const pending of await pendingReminders(trx, intake.id)) {
    if (await callOffDispatch(trx, intake.id, pending.id)) await deleteScheduledChase(trx, pending.id);
  }
  const plan = await findPlan(trx, intake.id);
  const items = await itemsOf(trx, intake.id);
  for (const person of await seriesOf(trx, intake, plan)) {
    // A reminder whose dispatch runs right now stays: its outcome plans that series' next one.
    if (await pendingReminder(trx, intake.id, person.id)) continue;
    if (seriesStopReason(intake, items, person)) continue;
    await planNextReminder(trx, world, intake, settingsOf(intake, plan), {
      nowMs: world.clock.now().getTime(),
      resuming: true,
      series: person.id,
    });
  }
}

/** The intake's stored chase settings, as the request fields that would set them. */
export async function currentChaseInput(db: Kysely<Database>, intakeId: string): Promise<ChaseSettingsInput> {
  const plan = await findPlan(db, intakeId);
  if (!plan) return {};
  const minutes = plan.interval_minutes;
  const interval =
    minutes === null
      ? {}
      : minutes % 1440 === 0
        ? { chase_interval: minutes / 1440, chase_interval_unit: 'days' as const }
        : { chase_interval: Math.round(minutes / 60), chase_interval_unit: 'hours' as const };
  return {
    ...interval,
    max_reminders: plan.max_reminders,
    respect_quiet_hours: plan.respect_quiet_hours === 1,
    ...(plan.chase_at_time ? { chase_at_time: plan.chase_at_time } : {}),
  };
}

/** A person added to an intake that is out: their invitation and the first reminder of their series. */
export async function inviteRecipient(
  trx: Kysely<Database>,
  world: World,
  intake: IntakeRow,
  email: string,
): Promise<void> {
  const plan = await ensurePlan(trx, world, intake);
  const person = (await seriesOf(trx, intake, plan)).find((p) => p.email === email);
  if (person) await startSeries(trx, world, intake, plan, person, world.clock.now().getTime());
}

/** A person leaves the intake: their pending reminder is called off. */
export async function callOffRecipient(
  trx: Kysely<Database>,
  world: World,
  intakeId: string,
  recipientId: string,
): Promise<void> {
  await cancelPending(trx, world, intakeId, 'recipient_removed', recipientId);
}

/**
 * An address may be written to again: a stalled client series is un-stalled (a recipient's stall is
 * cleared on their row by the recipients module), and the person's reminders resume when owed.
 */
export async function resumeSeriesOf(
  trx: Kysely<Database>,
  world: World,
  intake: IntakeRow,
  email: string,
): Promise<void> {
  let plan = await findPlan(trx, intake.id);
  if (email === intake.client_email && plan?.stalled_at) {
    await updatePlan(trx, intake.id, { stalled_at: null, updated_at: world.clock.now().toISOString() });
    plan = await findPlan(trx, intake.id);
  }
  const person = (await seriesOf(trx, intake, plan)).find((p) => p.email === email);
  if (person) await syncSeries(trx, world, intake, await itemsOf(trx, intake.id), plan, person);
}

/** The client's own reminder state: opted out, stalled by bounces. */
export async function clientReminderState(
  db: Kysely<Database>,
  intakeId: string,
): Promise<{ optedOutAt: string | null; stalledAt: string | null }> {
  const plan = await findPlan(db, intakeId);
  return { optedOutAt: plan?.opted_out_at ?? null, stalledAt: plan?.stalled_at ?? null };
}
