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
  MAX_CUSTOM_INTERVAL_MINUTES,
  MIN_CUSTOM_INTERVAL_MINUTES,
  isTimeZone,
  nextReminder,
  reminderStopReason,
  type ChaseItem,
  type ChaseScheduleName,
  type ChaseSettings,
} from '../../domain/chases.js';
import { planOf } from '../../domain/plans.js';
import { ApiError } from '../../http/errors.js';
import { cancelJobs, enqueueJob } from '../../jobs/jobs.js';
import { newId } from '../../lib/ids.js';
import { definitionOf, itemsOf, type IntakeRow, type ItemRow } from '../intakes/intakes.repository.js';
import { realTimeOf, type World } from '../intakes/world.js';
import { deleteMessagesOfIntake } from '../notify/notify.repository.js';
import { queueEmail } from '../notify/notify.service.js';
import { DISPATCH_CHASE, chaseSubject } from './chases.jobs.js';
import {
  closeScheduledChase,
  deleteChaseRows,
  insertChase,
  findPlan,
  insertPlan,
  lastSequenceNo,
  nextAttemptNo,
  pendingReminder,
  updatePlan,
  type ChasePlanRow,
} from './chases.repository.js';

export interface ChaseSettingsInput {
  chase_schedule?: string | undefined;
  chase_interval?: number | undefined;
  chase_interval_unit?: 'hours' | 'days' | undefined;
  max_reminders?: number | undefined;
  respect_quiet_hours?: boolean | undefined;
  chase_at_time?: string | undefined;
}

export interface ChasePlanValues {
  interval_minutes: number | null;
  max_reminders: number;
  respect_quiet_hours: number;
  chase_at_time: string | null;
}

/** Checks chase settings against each other and the plan: 422 when inconsistent, 402 when custom needs a plan. */
export function chasePlanValues(input: ChaseSettingsInput, planId: string): ChasePlanValues {
  const schedule = input.chase_schedule ?? 'default';
  let intervalMinutes: number | null = null;
  if (schedule === 'custom') {
    if (input.chase_interval === undefined) {
      throw new ApiError('unprocessable', 'chase_interval: required with chase_schedule custom.');
    }
    const plan = planOf(planId);
    if (!plan.features.custom_chase_schedules) {
      throw new ApiError(
        'plan_required',
        `Custom chase schedules are not part of the ${plan.name} plan; upgrade to use chase_schedule custom.`,
      );
    }
    intervalMinutes = input.chase_interval * ((input.chase_interval_unit ?? 'days') === 'hours' ? 60 : 1440);
    if (intervalMinutes < MIN_CUSTOM_INTERVAL_MINUTES || intervalMinutes > MAX_CUSTOM_INTERVAL_MINUTES) {
      throw new ApiError('unprocessable', 'chase_interval: must be between 1 hour and 90 days.');
    }
  } else if (input.chase_interval !== undefined || input.chase_interval_unit !== undefined) {
    throw new ApiError('unprocessable', 'chase_interval applies to chase_schedule custom only.');
  }
  return {
    interval_minutes: intervalMinutes,
    max_reminders: input.max_reminders ?? DEFAULT_MAX_REMINDERS,
    respect_quiet_hours: input.respect_quiet_hours === false ? 0 : 1,
    chase_at_time: input.chase_at_time ?? null,
  };
}

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
  return rows.map((row) => ({ key: row.key, required: definitionOf(row).required, status: row.status }));
}

/** Stores an intake's chase settings (at creation, in its transaction). */
export async function createChasePlan(
  trx: Kysely<Database>,
  world: World,
  intakeId: string,
  values: ChasePlanValues,
): Promise<void> {
  const at = world.clock.now().toISOString();
  await insertPlan(trx, {
    intake_id: intakeId,
    account_id: world.accountId,
    livemode: world.livemode ? 1 : 0,
    ...values,
    opted_out_at: null,
    stalled_at: null,
    thanked_at: null,
    created_at: at,
    updated_at: at,
  });
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

// ---- planning ----

/** Plans the series' next reminder: a scheduled chase row and its job, in the caller's transaction. */
export async function planNextReminder(
  trx: Kysely<Database>,
  world: World,
  intake: IntakeRow,
  settings: ChaseSettings,
  options: { nowMs: number; resuming: boolean },
): Promise<void> {
  if (!intake.sent_at) return;
  const last = await lastSequenceNo(trx, intake.id);
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
    message_id: null,
    provider_message_id: null,
    error: null,
    locked_until: null,
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

export async function cancelPending(
  trx: Kysely<Database>,
  world: World,
  intakeId: string,
  reason: string,
): Promise<void> {
  const pending = await pendingReminder(trx, intakeId);
  if (!pending || pending.status !== 'scheduled') return;
  const closed = await closeScheduledChase(trx, pending.id, {
    status: 'cancelled',
    attempt_no: await nextAttemptNo(trx, intakeId),
    error: reason,
    updated_at: world.clock.now().toISOString(),
  });
  if (closed) await cancelJobs(trx, { subjectId: chaseSubject(intakeId, pending.id) });
}

/**
 * When an intake is sent (creation with send, or POST /send): the portal-link email and the first
 * reminder of its series, in the sending transaction.
 */
export async function onIntakeSent(trx: Kysely<Database>, world: World, intake: IntakeRow): Promise<void> {
  await queueEmail(trx, world, intake, 'invitation');
  const plan = await ensurePlan(trx, world, intake);
  const sentAt = intake.sent_at ? Date.parse(intake.sent_at) : world.clock.now().getTime();
  await planNextReminder(trx, world, intake, settingsOf(intake, plan), { nowMs: sentAt, resuming: false });
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
  const stop = reminderStopReason({
    intakeStatus: intake.status,
    items: chaseItems(items),
    optedOut: Boolean(plan?.opted_out_at),
    stalled: Boolean(plan?.stalled_at),
  });
  const pending = await pendingReminder(trx, intake.id);
  if (stop && pending) await cancelPending(trx, world, intake.id, stop);
  if (!stop && !pending && intake.sent_at) {
    await planNextReminder(trx, world, intake, settingsOf(intake, plan), {
      nowMs: world.clock.now().getTime(),
      resuming: true,
    });
  }
  if (intake.status === 'completed' && previousStatus !== 'completed' && !plan?.thanked_at) {
    await queueEmail(trx, world, intake, 'completed');
    const ensured = plan ?? (await ensurePlan(trx, world, intake));
    if (ensured) await updatePlan(trx, intake.id, { thanked_at: world.clock.now().toISOString() });
  }
}

/** Archive: the pending reminder is cancelled (in the archiving transaction). */
export async function stopChases(trx: Kysely<Database>, world: World, intakeId: string): Promise<void> {
  await cancelPending(trx, world, intakeId, 'archived');
}

/** Delete: every chase, plan and message of the intake goes (its jobs go with the intake's). */
export async function deleteChaseData(trx: Kysely<Database>, intakeId: string): Promise<void> {
  await deleteChaseRows(trx, intakeId);
  await deleteMessagesOfIntake(trx, intakeId);
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
  return (await queueEmail(trx, world, intake, template, data)) !== null;
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
  // The pending reminder is replaced, not called off: it leaves no trace in the status object.
  const pending = await pendingReminder(trx, intake.id);
  if (pending?.status === 'scheduled') {
    await trx.deleteFrom('chases').where('id', '=', pending.id).where('status', '=', 'scheduled').execute();
    await cancelJobs(trx, { subjectId: chaseSubject(intake.id, pending.id) });
  }
  const plan = await findPlan(trx, intake.id);
  const stop = reminderStopReason({
    intakeStatus: intake.status,
    items: chaseItems(await itemsOf(trx, intake.id)),
    optedOut: Boolean(plan?.opted_out_at),
    stalled: Boolean(plan?.stalled_at),
  });
  if (!stop) {
    await planNextReminder(trx, world, intake, settingsOf(intake, plan), {
      nowMs: world.clock.now().getTime(),
      resuming: true,
    });
  }
}
