/**
 * Sending one chase when it falls due (the dispatch_chase job, or at once for a manual chase): claim,
 * check, render, send, record with its events, plan the next reminder. Bounces and stalls live here.
 */
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import {
  afterQuietHours,
  bounceStallsIntake,
  isQuietTime,
  outstandingItems,
  type ChaseSettings,
  type ChaseStatus,
} from '../../domain/chases.js';
import { enqueueJob, jobIdsOf, type Job } from '../../jobs/jobs.js';
import { retryDelayMs } from '../../jobs/worker.js';
import { deriveKey } from '../../lib/crypto.js';
import { newId } from '../../lib/ids.js';
import { hmacHex } from '../../lib/secrets.js';
import type { AppServices } from '../../services.js';
import { emitIntakeEvent } from '../../kernel/public-events.js';
import {
  findIntakeById,
  itemsOf,
  lockIntake,
  lockIntakeRow,
  type IntakeRow,
  type ItemRow,
} from '../intakes/intakes.service.js';
import { realTimeOf, worldOfIntake, type World } from '../../kernel/world.js';
import {
  isSuppressed,
  recordMessageCopy,
  suppressAddress,
  type MessageCopy,
} from '../notify/notify.service.js';
import {
  MAX_SEND_ATTEMPTS,
  messageContext,
  type ContextReads,
  tenantOf,
  transmit,
  type Transmission,
} from '../notify/notify.service.js';
import { renderEmail, renderSmsReminder } from '../notify/notify.templates.js';
import { DISPATCH_CHASE, chaseSubject, intakeOfChaseSubject } from './chases.jobs.js';
import {
  chasesOf,
  findChase,
  findChaseAfterIntakeLock,
  findPlan,
  settleChase,
  settleChaseAttempt,
  updatePlan,
  type ChasePlanRow,
  type ChaseRow,
  type SeriesId,
} from './chases.repository.js';
import { dispatchLoaders, suppressionKey } from './dispatch-reads.js';
import { findRecipientById, markRecipientStalled } from '../recipients/recipients.service.js';
import {
  cancelPending,
  chaseItems,
  ensurePlan,
  planNextReminder,
  seriesStopReason,
  settingsOf,
  type Series,
} from './chases.plan.js';

const systemActor = { type: 'system', id: null } as const;

function fixedClockWorld(world: World, atMs: number): World {
  return { ...world, clock: { now: () => new Date(atMs) } };
}

/**
 * The signed opt-out link of one person's reminders: the client's (`/optout/<intake>?sig=`) or an
 * also_notify recipient's (`&r=<recipient id>`). It works without login and acts only on POST.
 */
export function optOutUrl(services: AppServices, intakeId: string, recipientId: SeriesId = null): string {
  const who = recipientId ? `r=${recipientId}&` : '';
  return `${services.config.appUrl}/optout/${intakeId}?${who}sig=${optOutSignature(services, intakeId, recipientId)}`;
}

const optOutKeys = new Map<string, string>();

export function optOutSignature(
  services: AppServices,
  intakeId: string,
  recipientId: SeriesId = null,
): string {
  const secret = services.config.secretKey;
  let key = optOutKeys.get(secret);
  if (key === undefined) {
    key = deriveKey(secret, 'chase-opt-out').toString('hex');
    optOutKeys.set(secret, key);
  }
  return hmacHex(key, recipientId ? `${intakeId}/${recipientId}` : intakeId).slice(0, 32);
}

/** Whom a chase goes to: the client, or the also_notify recipient of its series (undefined: removed). */
async function personOf(
  db: Kysely<Database>,
  intake: IntakeRow,
  plan: { opted_out_at: string | null; stalled_at: string | null } | undefined,
  chase: ChaseRow,
): Promise<Series | undefined> {
  if (!chase.recipient_id) {
    return {
      id: null,
      email: intake.client_email,
      name: intake.client_name,
      optedOut: Boolean(plan?.opted_out_at),
      stalled: Boolean(plan?.stalled_at),
    };
  }
  const row = await findRecipientById(db, intake.id, chase.recipient_id);
  if (!row) return undefined;
  return {
    id: row.id,
    email: row.email,
    name: row.name,
    optedOut: Boolean(row.opted_out_at),
    stalled: Boolean(row.stalled_at),
  };
}

interface Dispatch {
  services: AppServices;
  world: World;
  intake: IntakeRow;
  chase: ChaseRow;
  /** The address it goes to (email or phone), recorded on the chase. */
  address: string | null;
  settings: ChaseSettings;
  atMs: number;
}

interface Outcome {
  status: Exclude<ChaseStatus, 'scheduled'>;
  error?: string | null;
  /** A hard bounce reported now: suppress the address and raise chase.bounced. */
  hardBounce?: { reason: 'hard_bounce' | 'spam_complaint' } | undefined;
  message?: MessageCopy | undefined;
  providerMessageId?: string | null;
  sent?: boolean;
}

/** Why a chase whose dispatch job was given up is recorded failed: its send may have gone out. */
export const CUT_OFF_CHASE_ERROR =
  'The sender stopped before recording the outcome; not retried, to never send twice.';

/**
 * Runs a chase's dispatch now, in the caller (a manual chase answers with its outcome): its job,
 * through the job engine, so the job stays the chase's one sender. A dispatch this process runs
 * already is waited for; one another process runs is not.
 */
export async function dispatchChase(services: AppServices, chaseId: string): Promise<void> {
  const db = services.db.kysely;
  const chase = await findChase(db, chaseId);
  if (!chase) return;
  const jobs = await jobIdsOf(db, {
    subjectId: chaseSubject(chase.intake_id, chase.id),
    kind: DISPATCH_CHASE,
  });
  if (jobs.length > 0) await services.jobs.runNow(jobs);
}

/**
 * The dispatch_chase job: check that the chase should still go out, send it, record the outcome with
 * the end of the job, plan the next reminder. The job is the chase's one sender (its lease the only
 * claim), at most once (see DISPATCH_CHASE); a transient failure with nothing sent ends this job and
 * queues a new one after the engine's backoff delay.
 */
export async function runChaseDispatch(services: AppServices, job: Job<{ chase_id: string }>): Promise<void> {
  const db = services.db.kysely;
  const chaseId = job.payload.chase_id;
  const named = intakeOfChaseSubject(job.subjectId, chaseId) ?? (await findChase(db, chaseId))?.intake_id;
  if (named === undefined) return;
  let reads = await readForDispatch(services, job.accountId, named, chaseId);
  const found = reads.chase;
  if (!found || found.status !== 'scheduled') return;
  // The subject and the account are the chase's own: read again by its rows should they ever differ.
  if (found.intake_id !== named || (reads.intake && reads.intake.account_id !== job.accountId)) {
    reads = await readForDispatch(
      services,
      reads.intake?.account_id ?? job.accountId,
      found.intake_id,
      chaseId,
    );
  }
  const { chase, intake, plan, items, context: contextReads } = reads;
  const { sender } = contextReads;
  if (!chase || chase.status !== 'scheduled' || !intake) return;
  const base = await worldOfIntake(db, intake, systemActor, services.clock);
  const settings = settingsOf(intake, plan);

  // Test time jumps (advance_clock): a reminder passed over goes out at its own moment, as it would have.
  const nowMs = base.clock.now().getTime();
  const plannedMs = Date.parse(chase.scheduled_for);
  const atMs = !base.livemode && plannedMs < nowMs ? plannedMs : nowMs;
  const world = fixedClockWorld(base, atMs);
  const person = await personOf(db, intake, plan, chase);
  const address = chase.channel === 'email' ? (person?.email ?? null) : intake.client_phone;
  const run: Dispatch = { services, world, intake, chase, address, settings, atMs };
  /** Ends the job with the chase's outcome; `first` runs in the same transaction, before it. */
  const finish = (outcome: Outcome, first?: (trx: Kysely<Database>) => Promise<void>) =>
    job.finish(async (trx) => {
      await first?.(trx);
      await recordChaseOutcome(trx, run, outcome);
    });
  if (!person) return finish({ status: 'cancelled', error: 'recipient_removed' });

  if (chase.trigger === 'schedule') {
    const stop = seriesStopReason(intake, items, person);
    if (stop) return finish({ status: 'cancelled', error: stop });
    if (settings.respectQuietHours && isQuietTime(atMs, settings.timeZone)) {
      return postpone(run, job, afterQuietHours(atMs, settings.timeZone));
    }
  }
  if (chase.channel === 'email') {
    const suppressed =
      person.id === null ? reads.clientSuppressed : await isSuppressed(db, tenantOf(world), person.email);
    if (suppressed) {
      return finish({ status: 'bounced', error: 'suppressed: the address bounced before' });
    }
    if (!world.livemode && plan && plan.bounce_next === 1) {
      // The simulated bounce is used up with the outcome it gives: a run that fails before recording
      // it is retried, and bounces then.
      return finish(
        {
          status: 'bounced',
          error: '550 simulated hard bounce (test mode)',
          hardBounce: { reason: 'hard_bounce' },
        },
        (trx) => updatePlan(trx, intake.id, { bounce_next: 0 }),
      );
    }
  }
  if (chase.channel === 'sms' && !intake.client_phone) {
    return finish({ status: 'failed', error: 'The client has no phone number.' });
  }
  // Called off since it was read (opt-out, archive, removal)? A call-off holds the intake's lock and
  // leaves a running dispatch alone, so past this check the chase is this job's to record. (On
  // PostgreSQL the chase was read after waiting for the lock: readForDispatch.)
  if (!reads.readAfterLock && !(await stillScheduled(db, intake.id, chase.id))) return;

  const unsubscribe = optOutUrl(services, intake.id, person.id);
  const context = await messageContext(services, db, intake, sender, {
    optOutUrl: chase.channel === 'email' ? unsubscribe : null,
    items,
    reads: contextReads,
    ...(person.id === null ? {} : { clientName: person.name }),
  });
  const messageId = newId('msg');
  const to = address ?? '';
  const email = chase.channel === 'email' ? renderEmail('reminder', context) : null;
  const text = email ? email.text : renderSmsReminder(context);
  job.beginIrreversible();
  const result: Transmission = await transmit(
    services,
    world.livemode,
    {
      messageId,
      channel: chase.channel,
      to,
      subject: email?.subject ?? null,
      text,
      html: email?.html ?? null,
      fromName: sender.name,
      replyTo: sender.email || null,
      headers: email
        ? {
            'List-Unsubscribe': `<${unsubscribe}>`,
            'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click',
          }
        : {},
    },
    job.signal,
  );
  const failures = chase.send_attempts + 1;
  if (result.outcome === 'retry' && failures < MAX_SEND_ATTEMPTS) {
    // Nothing was delivered: still scheduled, with a new job after the backoff delay.
    await job.finish(async (trx) => {
      if (!(await settleChase(trx, chase.id, { error: result.error, send_attempts: failures }))) return;
      await enqueueDispatch(
        trx,
        world,
        intake.id,
        chase.id,
        services.clock.now().getTime() + (retryDelayMs(failures) ?? 60_000),
      );
    });
    return;
  }
  const delivered =
    result.outcome === 'captured' || result.outcome === 'dropped' || result.outcome === 'sent'
      ? result
      : undefined;
  const problem = 'error' in result ? result.error : null;
  const message: MessageCopy = {
    id: messageId,
    accountId: intake.account_id,
    livemode: intake.livemode === 1,
    intakeId: intake.id,
    chaseId: chase.id,
    channel: chase.channel,
    template: 'reminder',
    to,
    subject: email?.subject ?? null,
    text,
    html: email?.html ?? null,
    status: result.outcome === 'retry' ? 'failed' : result.outcome,
    providerMessageId: delivered?.providerMessageId ?? null,
    error: problem,
    createdAt: new Date(atMs).toISOString(),
    sentAt: delivered ? new Date(atMs).toISOString() : null,
  };

  if (delivered) {
    return finish({ status: 'sent', sent: true, message, providerMessageId: delivered.providerMessageId });
  }
  return finish({
    status: result.outcome === 'bounced' ? 'bounced' : 'failed',
    error: problem,
    hardBounce: result.outcome === 'bounced' ? { reason: 'hard_bounce' } : undefined,
    message,
  });
}

/** What a dispatch reads before it decides and renders. */
interface DispatchReads {
  chase: ChaseRow | undefined;
  /** The chase was read after any transaction holding the intake's lock had committed (PostgreSQL). */
  readAfterLock: boolean;
  intake: IntakeRow | undefined;
  /** Whether the intake's client's address is suppressed (the client's own series). */
  clientSuppressed: boolean;
  plan: ChasePlanRow | undefined;
  items: ItemRow[];
  /** The sender, the files and the branding (readContext). */
  context: ContextReads;
}

/**
 * Everything a dispatch reads before it decides, side by side, and together with the dispatches that
 * start in the same pass (dispatchLoaders): on PostgreSQL one round trip's wait instead of one per
 * read, and one statement per kind of row for the reminders one claim took (but the chase on
 * PostgreSQL: read after its intake's lock, one statement per reminder). The intake is the one named
 * by the job's subject, the sender the job's account (both the chase's own).
 */
async function readForDispatch(
  services: AppServices,
  accountId: string,
  intakeId: string,
  chaseId: string,
): Promise<DispatchReads> {
  const db = services.db.kysely;
  const load = dispatchLoaders(services);
  // Waiting for the intake's lock here is the check stillScheduled makes on SQLite: a call-off, an
  // intake's deletion or a cut-off chase recorded by another worker holds the lock until it commits,
  // and the chase read after it sees what it did.
  const readAfterLock = services.db.dialect === 'postgres';
  // The intake with whether its client's address is suppressed (what the client's series needs),
  // read on its own only when it could not be read with the intake.
  const intakeAndSuppression = async () => {
    const found = await load.intakes.load(intakeId);
    if (!found) return [undefined, false] as const;
    const { intake, clientSuppressed } = found;
    if (clientSuppressed !== undefined) return [intake, clientSuppressed] as const;
    const key = suppressionKey(intake.account_id, intake.livemode === 1, intake.client_email);
    return [intake, (await load.suppressed.load(key)) === true] as const;
  };
  const context = async (): Promise<ContextReads> => {
    const [files, who] = await Promise.all([load.files.load(intakeId), load.senders.load(accountId)]);
    if (!who) throw new Error(`no sender read for account ${accountId}`);
    return { files: files ?? [], ...who };
  };
  const [chase, [intake, clientSuppressed], plan, items, reads] = await Promise.all([
    readAfterLock ? findChaseAfterIntakeLock(db, intakeId, chaseId) : load.chases.load(chaseId),
    intakeAndSuppression(),
    load.plans.load(intakeId),
    load.items.load(intakeId).then((rows) => rows ?? []),
    context(),
  ]);
  return { chase, readAfterLock, intake, clientSuppressed, plan, items, context: reads };
}

/** Whether the chase is still scheduled, read under the intake's lock (after any call-off commits). */
async function stillScheduled(db: Kysely<Database>, intakeId: string, chaseId: string): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    await lockIntake(trx, intakeId);
    return (await findChase(trx, chaseId))?.status === 'scheduled';
  });
}

/** A chase's dispatch job, due at `dueAt` (real epoch ms). Returns its id. */
export function enqueueDispatch(
  trx: Kysely<Database>,
  world: World,
  intakeId: string,
  chaseId: string,
  dueAt: number,
): Promise<string> {
  return enqueueJob(trx, {
    accountId: world.accountId,
    livemode: world.livemode,
    kind: DISPATCH_CHASE,
    subjectId: chaseSubject(intakeId, chaseId),
    payload: { chase_id: chaseId },
    dueAt,
  });
}

/** Quiet hours found at dispatch (the time zone became known after planning): due again later. */
async function postpone(run: Dispatch, job: Job<unknown>, untilMs: number): Promise<void> {
  const { world, intake, chase } = run;
  await job.finish(async (trx) => {
    const moved = await settleChase(trx, chase.id, {
      scheduled_for: new Date(untilMs).toISOString(),
      updated_at: world.clock.now().toISOString(),
    });
    if (moved) await enqueueDispatch(trx, world, intake.id, chase.id, realTimeOf(world, untilMs));
  });
}

/**
 * DISPATCH_CHASE's give-up hook, in the give-up transaction: a chase whose send may have gone out is
 * recorded failed, never sent again, and its series goes on.
 */
export async function recordCutOffChase(
  services: AppServices,
  trx: Kysely<Database>,
  chaseId: string,
): Promise<void> {
  const chase = await findChase(trx, chaseId);
  if (!chase || chase.status !== 'scheduled') return;
  const intake = await findIntakeById(trx, chase.intake_id);
  if (!intake) return;
  const base = await worldOfIntake(trx, intake, systemActor, services.clock);
  const plan = await findPlan(trx, intake.id);
  const person = await personOf(trx, intake, plan, chase);
  const atMs = base.clock.now().getTime();
  await recordChaseOutcome(
    trx,
    {
      services,
      world: fixedClockWorld(base, atMs),
      intake,
      chase,
      address: chase.channel === 'email' ? (person?.email ?? null) : intake.client_phone,
      settings: settingsOf(intake, plan),
      atMs,
    },
    { status: 'failed', error: CUT_OFF_CHASE_ERROR },
  );
}

/** Records a chase's outcome with its events, and plans the series' next reminder (in the caller's transaction). */
async function recordChaseOutcome(trx: Kysely<Database>, run: Dispatch, outcome: Outcome): Promise<void> {
  const { world, intake, chase, address, settings, atMs } = run;
  const series = chase.recipient_id ?? null;
  const at = new Date(atMs).toISOString();
  await lockIntakeRow(trx, intake.id);
  const settled = await settleChaseAttempt(trx, chase, {
    status: outcome.status,
    sent_at: outcome.sent || outcome.hardBounce ? at : null,
    recipient: address,
    message_id: outcome.message?.id ?? null,
    provider_message_id: outcome.providerMessageId ?? null,
    error: outcome.error ?? null,
    updated_at: at,
  });
  if (!settled) return;
  const { attemptNo, lastSequenceNo } = settled;
  if (outcome.message) await recordMessageCopy(trx, outcome.message);
  if (outcome.sent) {
    await emit(trx, world, intake, 'chase.sent', {
      chase_id: chase.id,
      channel: chase.channel,
      attempt_no: attemptNo,
      trigger: chase.trigger,
      recipient: address,
      sent_at: at,
    });
  }
  let stalled = false;
  if (outcome.status === 'bounced') {
    if (outcome.hardBounce) {
      await recordHardBounce(
        trx,
        world,
        intake,
        chase,
        outcome.hardBounce.reason,
        outcome.message?.id ?? null,
        address ?? intake.client_email,
      );
    }
    stalled = await stallIfThirdBounce(trx, world, intake, series);
  }
  if (chase.trigger === 'schedule' && outcome.status !== 'cancelled' && !stalled) {
    await planNextReminder(trx, world, intake, settings, {
      nowMs: atMs,
      resuming: false,
      series,
      lastSequenceNo,
    });
  }
}

/** An intake's event, in the caller's transaction (the transactional outbox). */
export const emit = emitIntakeEvent;

/** A hard bounce or spam report: the address is suppressed at once and chase.bounced fires. */
export async function recordHardBounce(
  trx: Kysely<Database>,
  world: World,
  intake: IntakeRow,
  chase: ChaseRow,
  reason: 'hard_bounce' | 'spam_complaint',
  messageId: string | null,
  address: string = intake.client_email,
): Promise<void> {
  const at = world.clock.now().toISOString();
  await suppressAddress(trx, tenantOf(world), { address, reason, messageId, at });
  await emit(trx, world, intake, 'chase.bounced', {
    chase_id: chase.id,
    channel: chase.channel,
    client_email: address,
    bounced_at: at,
    reason,
  });
}

/**
 * Three consecutive bounced reminder emails of one person's series stop that series; for the
 * client's own series intake.stalled fires too. Whether it stalled now.
 */
export async function stallIfThirdBounce(
  trx: Kysely<Database>,
  world: World,
  intake: IntakeRow,
  series: SeriesId = null,
): Promise<boolean> {
  const chases = (await chasesOf(trx, intake.id)).filter(
    (c) => c.attempt_no !== null && (c.recipient_id ?? null) === series,
  );
  if (!bounceStallsIntake(chases)) return false;
  const at = world.clock.now().toISOString();
  if (series !== null) {
    await markRecipientStalled(trx, series, at);
    await cancelPending(trx, world, intake.id, 'stalled', series);
    return true;
  }
  await ensurePlan(trx, world, intake);
  await updatePlan(trx, intake.id, { stalled_at: at, updated_at: at });
  await cancelPending(trx, world, intake.id, 'stalled', null);
  await emit(trx, world, intake, 'intake.stalled', {
    project_name: intake.project_name,
    client_email: intake.client_email,
    stalled_at: at,
    missing_items: outstandingItems(chaseItems(await itemsOf(trx, intake.id))).map((i) => i.key),
  });
  return true;
}
