/**
 * The chases module's entry points: manual chases, status records, the test-mode bounce, provider
 * bounce reports and opt-outs; planning and dispatch are re-exported from their files.
 */
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import { outstandingItems, type ChaseChannel, type ChaseStatus } from '../../domain/chases.js';
import { planOf } from '../../domain/plans.js';
import { ApiError, notFound } from '../../http/errors.js';
import { newId } from '../../lib/ids.js';
import type { AppServices } from '../../services.js';
import { auditInTransaction } from '../audit/audit.scope.js';
import {
  findIntake,
  findIntakeById,
  itemsOf,
  lockIntake,
  type IntakeRow,
} from '../intakes/intakes.service.js';
import { realTimeOf, worldOfIntake, type World } from '../../kernel/world.js';
import {
  findMessage,
  isSuppressed,
  markMessageBounced,
  tellEmailBounced,
  suppressAddress,
  tenantOf,
} from '../notify/notify.service.js';
import { addUsage, usageValue } from '../usage/usage.service.js';
import {
  findRecipientById,
  markRecipientOptedOut,
  recipientsOf,
  type RecipientRow,
} from '../recipients/recipients.service.js';
import {
  chasesOf,
  findChase,
  insertChase,
  findPlan,
  updateChase,
  updatePlan,
  type ChaseRow,
} from './chases.repository.js';

export {
  callOffRecipient,
  clientReminderState,
  createChasePlan,
  inviteRecipient,
  resumeSeriesOf,
  currentChaseInput,
  deleteChaseData,
  notifyClient,
  onIntakeSent,
  settingsOf,
  startNewIntake,
  stopChases,
  syncChases,
} from './chases.plan.js';
export {
  dispatchChase,
  optOutSignature,
  optOutUrl,
  recordCutOffChase,
  runChaseDispatch,
} from './chases.dispatch.js';
export { scheduleOverdueCheck } from './chases.overdue.js';
import { scheduleOverdueCheck } from './chases.overdue.js';
import type { ChaseSettingsInput } from '../intakes/chase-settings.js';
import { replanChases as replanSeries } from './chases.plan.js';

/**
 * New chase settings, due date or client time zone for an intake (PATCH /v1/intakes/:id, in its
 * transaction, after the intake row carries the new values): every person's pending reminder is
 * re-planned from now under the new settings, and the overdue check follows the due date.
 */
export async function replanChases(
  trx: Kysely<Database>,
  world: World,
  intake: IntakeRow,
  input: ChaseSettingsInput,
  planId: string,
): Promise<void> {
  await replanSeries(trx, world, intake, input, planId);
  await scheduleOverdueCheck(trx, world, intake);
}
import { chaseItems, ensurePlan, cancelPending } from './chases.plan.js';
import { emit, enqueueDispatch, stallIfThirdBounce } from './chases.dispatch.js';

const systemActor = { type: 'system', id: null } as const;

export interface ChaseRecord {
  chase_id: string;
  channel: ChaseChannel;
  status: ChaseStatus;
  attempt_no: number;
  sent_at: string | null;
  scheduled_for: string;
  trigger: 'schedule' | 'manual';
  /** The address it went to; for one not yet sent, whose series it is (null: the client). */
  recipient: string | null;
}

function toRecord(row: ChaseRow, attemptNo: number, recipients: Map<string, string>): ChaseRecord {
  return {
    chase_id: row.id,
    channel: row.channel,
    // A send under way by a process of the previous release shows as still scheduled.
    status: row.status === 'sending' ? 'scheduled' : row.status,
    attempt_no: attemptNo,
    sent_at: row.sent_at,
    scheduled_for: row.scheduled_for,
    trigger: row.trigger,
    recipient: row.recipient ?? (row.recipient_id ? (recipients.get(row.recipient_id) ?? null) : null),
  };
}

/**
 * CONTRACT: every chase sent, bounced, failed or cancelled, plus the next scheduled one (of each
 * person's series, when also_notify recipients have their own).
 */
export async function chaseRecords(
  db: Kysely<Database>,
  intakeId: string,
  /** The intake's also_notify rows, when the caller has them already. */
  knownRecipients?: readonly RecipientRow[],
): Promise<ChaseRecord[]> {
  const [rows, others] = await Promise.all([
    chasesOf(db, intakeId),
    knownRecipients ?? recipientsOf(db, intakeId),
  ]);
  const recipients = new Map(others.map((r) => [r.id, r.email]));
  const done = rows.filter((r) => r.attempt_no !== null);
  const records = done.map((r) => toRecord(r, r.attempt_no ?? 0, recipients));
  const waiting = rows
    .filter((r) => r.attempt_no === null)
    .sort((a, b) => a.scheduled_for.localeCompare(b.scheduled_for));
  const seen = new Set<string | null>();
  let attemptNo = done[done.length - 1]?.attempt_no ?? 0;
  for (const next of waiting) {
    const series = next.trigger === 'manual' ? next.id : (next.recipient_id ?? null);
    if (seen.has(series)) continue;
    seen.add(series);
    records.push(toRecord(next, ++attemptNo, recipients));
  }
  return records;
}

/** POST /v1/intakes/:id/chase: a chase now, outside the schedule; answers with its record. */
export async function chaseNow(
  services: AppServices,
  world: World,
  planId: string,
  id: string,
  channel: ChaseChannel,
): Promise<ChaseRecord> {
  const db = services.db.kysely;
  const found = await findIntake(db, world, id);
  if (!found) throw new ApiError('not_found', `No intake with id ${id}.`);
  const chaseId = newId('ch');
  let dispatchJob: string | undefined;
  await db.transaction().execute(async (trx) => {
    const intake = await lockIntake(trx, found.id);
    // Deleted since it was looked up: nothing is left to change.
    if (!intake) throw notFound('intake', found.id);
    if (intake.status === 'draft')
      throw new ApiError('conflict', 'The intake has not been sent yet: send it first.');
    if (intake.status === 'archived') throw new ApiError('conflict', 'The intake is archived.');
    if (intake.status === 'completed') {
      throw new ApiError('conflict', 'The intake is completed: every required item is approved.');
    }
    const plan = await findPlan(trx, intake.id);
    if (plan?.opted_out_at) {
      throw new ApiError('conflict', 'The client opted out of reminders for this intake.');
    }
    if (outstandingItems(chaseItems(await itemsOf(trx, intake.id))).length === 0) {
      throw new ApiError('conflict', 'The client owes nothing right now: every required item is submitted.');
    }
    const now = world.clock.now();
    if (channel === 'sms') {
      const plan = planOf(planId);
      if (!plan.features.sms_chases) {
        throw new ApiError(
          'plan_required',
          `SMS chases are not part of the ${plan.name} plan; upgrade to use them.`,
        );
      }
      if (!intake.client_phone) {
        throw new ApiError(
          'unprocessable',
          'client.phone: the intake has no phone number, so it cannot be chased by SMS.',
        );
      }
      if (world.livemode) {
        await addUsage(trx, world, 'sms_messages', 1, now);
        const used = await usageValue(trx, world, 'sms_messages', now);
        if (used > plan.quotas.sms_per_month) {
          throw new ApiError(
            'quota_exceeded',
            `This month's quota of ${plan.quotas.sms_per_month} SMS on the ${plan.name} plan is used up.`,
          );
        }
      }
    } else if (await isSuppressed(trx, tenantOf(world), intake.client_email)) {
      throw new ApiError(
        'conflict',
        `${intake.client_email} bounced and is suppressed: chase by sms, or reinstate the address.`,
      );
    }
    const at = now.toISOString();
    await insertChase(trx, {
      id: chaseId,
      account_id: world.accountId,
      livemode: world.livemode ? 1 : 0,
      intake_id: intake.id,
      channel,
      trigger: 'manual',
      sequence_no: null,
      attempt_no: null,
      status: 'scheduled',
      scheduled_for: at,
      sent_at: null,
      recipient: null,
      message_id: null,
      provider_message_id: null,
      error: null,
      created_at: at,
      updated_at: at,
    });
    // Run below, in this request, so the answer has the outcome. Due only after that run could have
    // ended: workers leave it to this request, and it still goes out if this process dies first.
    dispatchJob = await enqueueDispatch(
      trx,
      world,
      intake.id,
      chaseId,
      realTimeOf(world, now.getTime()) + MANUAL_CHASE_FALLBACK_MS,
    );
    await auditInTransaction(trx);
  });
  // A transient failure leaves the chase scheduled, with a new job after the backoff delay.
  if (dispatchJob) await services.jobs.runNow([dispatchJob]);
  const records = await chaseRecords(db, found.id);
  const record = records.find((r) => r.chase_id === chaseId);
  if (record) return record;
  const row = await findChase(db, chaseId);
  if (!row) throw new ApiError('not_found', `No chase ${chaseId}.`);
  return toRecord(row, row.attempt_no ?? (records[records.length - 1]?.attempt_no ?? 0) + 1, new Map());
}

/**
 * How long a manual chase's job waits for the request that runs it before any worker may: longer
 * than a send can take (SMTP gives up within 40 s).
 */
const MANUAL_CHASE_FALLBACK_MS = 2 * 60_000;

/** Test mode: the intake's next reminder email hard-bounces. */
export async function simulateBounce(services: AppServices, world: World, intake: IntakeRow): Promise<void> {
  if (intake.status === 'draft') throw new ApiError('conflict', 'The intake has not been sent yet.');
  await services.db.kysely.transaction().execute(async (trx) => {
    await ensurePlan(trx, world, intake);
    await updatePlan(trx, intake.id, { bounce_next: 1, updated_at: world.clock.now().toISOString() });
  });
}

/**
 * A provider's report that a sent email hard-bounced or was marked as spam (inbound endpoint):
 * suppresses the address; when the email was a chase, the chase becomes bounced, chase.bounced fires
 * and three in a row stall the intake. Returns what was done.
 */
export async function applyReportedBounce(
  services: AppServices,
  report: { messageId: string; reason: 'hard_bounce' | 'spam_complaint'; detail: string | null },
): Promise<'suppressed' | 'ignored'> {
  const db = services.db.kysely;
  const message = await findMessage(db, report.messageId);
  if (!message || message.channel !== 'email') return 'ignored';
  const intake = message.intake_id ? await findIntakeById(db, message.intake_id) : undefined;
  const tenant = { accountId: message.account_id, livemode: message.livemode === 1 };
  const world = intake ? await worldOfIntake(db, intake, systemActor, services.clock) : undefined;
  const at = (world?.clock ?? services.clock).now().toISOString();
  await db.transaction().execute(async (trx) => {
    await markMessageBounced(trx, message.id, report.detail ?? report.reason);
    await suppressAddress(trx, tenant, {
      address: message.to_address,
      reason: report.reason,
      messageId: message.id,
      at,
    });
    if (!intake || !world) return;
    if (!message.chase_id) {
      await tellEmailBounced(trx, message, at);
      return;
    }
    await lockIntake(trx, intake.id);
    const chase = await findChase(trx, message.chase_id);
    if (!chase || chase.status !== 'sent') return;
    await updateChase(trx, chase.id, {
      status: 'bounced',
      error: report.detail ?? report.reason,
      updated_at: at,
    });
    await emit(trx, world, intake, 'chase.bounced', {
      chase_id: chase.id,
      channel: chase.channel,
      client_email: message.to_address,
      bounced_at: at,
      reason: report.reason,
    });
    await stallIfThirdBounce(trx, world, intake, chase.recipient_id ?? null);
  });
  return 'suppressed';
}

/**
 * Someone used a reminder's opt-out link: no more reminders to them for this intake (the client's
 * own series, or an also_notify recipient's when `recipientId` is given); chase.opted_out fires once.
 */
export async function optOut(
  services: AppServices,
  intakeId: string,
  recipientId: string | null = null,
): Promise<IntakeRow | undefined> {
  const db = services.db.kysely;
  const intake = await findIntakeById(db, intakeId);
  if (!intake) return undefined;
  const world = await worldOfIntake(db, intake, { type: 'client', id: null }, services.clock);
  await db.transaction().execute(async (trx) => {
    const locked = await lockIntake(trx, intake.id);
    // Deleted since it was looked up: there are no reminders left to stop.
    if (!locked) return;
    const at = world.clock.now().toISOString();
    let email = locked.client_email;
    if (recipientId === null) {
      const plan = await ensurePlan(trx, world, locked);
      if (plan?.opted_out_at) return;
      await updatePlan(trx, locked.id, { opted_out_at: at, updated_at: at });
    } else {
      const recipient = await findRecipientById(trx, locked.id, recipientId);
      if (!recipient || recipient.opted_out_at) return;
      email = recipient.email;
      await markRecipientOptedOut(trx, recipient.id, at);
    }
    await cancelPending(trx, world, locked.id, 'opted_out', recipientId);
    await emit(trx, world, locked, 'chase.opted_out', {
      client_email: email,
      channel: 'email',
      opted_out_at: at,
    });
  });
  return intake;
}
