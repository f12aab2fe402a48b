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
  type ChaseChannel,
  type ChaseSettings,
  type ChaseStatus,
} from '../../domain/chases.js';
import { enqueueJob } from '../../jobs/jobs.js';
import { retryDelayMs } from '../../jobs/worker.js';
import { deriveKey } from '../../lib/crypto.js';
import { newId } from '../../lib/ids.js';
import { hmacHex } from '../../lib/secrets.js';
import type { AppServices } from '../../services.js';
import { emitIntakeEvent } from '../../kernel/public-events.js';
import { findIntakeById, itemsOf, lockIntake, type IntakeRow } from '../intakes/intakes.service.js';
import { realTimeOf, worldOfIntake, type World } from '../../kernel/world.js';
import { insertMessage, isSuppressed, suppressAddress } from '../notify/notify.service.js';
import {
  MAX_SEND_ATTEMPTS,
  SEND_LEASE_MS,
  messageContext,
  senderOf,
  tenantOf,
  transmit,
  type Transmission,
} from '../notify/notify.service.js';
import { renderEmail, renderSmsReminder } from '../notify/notify.templates.js';
import { DISPATCH_CHASE, chaseSubject } from './chases.jobs.js';
import {
  chasesOf,
  claimChase,
  findChase,
  findPlan,
  nextAttemptNo,
  settleChase,
  updatePlan,
  type ChaseRow,
  type SeriesId,
} from './chases.repository.js';
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
  lease: number;
  settings: ChaseSettings;
  atMs: number;
}

interface Outcome {
  status: Exclude<ChaseStatus, 'scheduled'>;
  error?: string | null;
  /** A hard bounce reported now: suppress the address and raise chase.bounced. */
  hardBounce?: { reason: 'hard_bounce' | 'spam_complaint' } | undefined;
  message?: Parameters<typeof insertMessage>[1] | undefined;
  providerMessageId?: string | null;
  sent?: boolean;
}

/**
 * The dispatch_chase job, and the immediate send of a manual chase: claim the chase, check that it
 * should still go out, send it, record the outcome, plan the next reminder. At most once: the claim
 * decides who sends; a claim left behind by a crash is recorded as failed, never sent again.
 */
export async function dispatchChase(services: AppServices, chaseId: string): Promise<void> {
  const db = services.db.kysely;
  const found = await findChase(db, chaseId);
  if (!found) return;
  const realNow = services.clock.now().getTime();
  const intake = await findIntakeById(db, found.intake_id);
  if (!intake) return;
  const base = await worldOfIntake(db, intake, systemActor, services.clock);
  const plan = await findPlan(db, intake.id);
  const settings = settingsOf(intake, plan);

  if (found.status === 'sending' && (found.locked_until ?? 0) < realNow) {
    const atMs = base.clock.now().getTime();
    await finish(
      {
        services,
        world: fixedClockWorld(base, atMs),
        intake,
        chase: found,
        address: found.recipient,
        lease: found.locked_until ?? 0,
        settings,
        atMs,
      },
      {
        status: 'failed',
        error: 'The sender stopped before recording the outcome; not retried, to never send twice.',
      },
    );
    return;
  }
  if (found.status !== 'scheduled') return;
  const lease = realNow + SEND_LEASE_MS;
  if (!(await claimChase(db, found.id, lease))) return;
  const chase: ChaseRow = {
    ...found,
    status: 'sending',
    locked_until: lease,
    send_attempts: found.send_attempts + 1,
  };

  // Test time jumps (advance_clock): a reminder passed over goes out at its own moment, as it would have.
  const nowMs = base.clock.now().getTime();
  const plannedMs = Date.parse(chase.scheduled_for);
  const atMs = !base.livemode && plannedMs < nowMs ? plannedMs : nowMs;
  const world = fixedClockWorld(base, atMs);
  const person = await personOf(db, intake, plan, chase);
  const address = chase.channel === 'email' ? (person?.email ?? null) : intake.client_phone;
  const run: Dispatch = { services, world, intake, chase, address, lease, settings, atMs };
  if (!person) return finish(run, { status: 'cancelled', error: 'recipient_removed' });

  const items = await itemsOf(db, intake.id);
  if (chase.trigger === 'schedule') {
    const stop = seriesStopReason(intake, items, person);
    if (stop) return finish(run, { status: 'cancelled', error: stop });
    if (settings.respectQuietHours && isQuietTime(atMs, settings.timeZone)) {
      return postpone(run, afterQuietHours(atMs, settings.timeZone));
    }
  }
  if (chase.channel === 'email') {
    if (await isSuppressed(db, tenantOf(world), person.email)) {
      return finish(run, { status: 'bounced', error: 'suppressed: the address bounced before' });
    }
    if (!world.livemode && plan && plan.bounce_next === 1) {
      await updatePlan(db, intake.id, { bounce_next: 0 });
      return finish(run, {
        status: 'bounced',
        error: '550 simulated hard bounce (test mode)',
        hardBounce: { reason: 'hard_bounce' },
      });
    }
  }
  if (chase.channel === 'sms' && !intake.client_phone) {
    return finish(run, { status: 'failed', error: 'The client has no phone number.' });
  }

  const sender = await senderOf(db, intake.account_id);
  const unsubscribe = optOutUrl(services, intake.id, person.id);
  const context = await messageContext(services, db, intake, sender, {
    optOutUrl: chase.channel === 'email' ? unsubscribe : null,
    items,
    ...(person.id === null ? {} : { clientName: person.name }),
  });
  const messageId = newId('msg');
  const to = address ?? '';
  const email = chase.channel === 'email' ? renderEmail('reminder', context) : null;
  const text = email ? email.text : renderSmsReminder(context);
  const result: Transmission = await transmit(services, world.livemode, {
    messageId,
    channel: chase.channel as ChaseChannel,
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
  });
  if (result.outcome === 'retry' && chase.send_attempts < MAX_SEND_ATTEMPTS) {
    // Nothing was delivered: back to scheduled, with a fresh job after the backoff delay.
    await db.transaction().execute(async (trx) => {
      if (!(await settleChase(trx, chase.id, lease, { status: 'scheduled', error: result.error }))) return;
      await enqueueJob(trx, {
        accountId: world.accountId,
        livemode: world.livemode,
        kind: DISPATCH_CHASE,
        subjectId: chaseSubject(intake.id, chase.id),
        payload: { chase_id: chase.id },
        dueAt: realNow + (retryDelayMs(chase.send_attempts) ?? 60_000),
      });
    });
    return;
  }
  const delivered =
    result.outcome === 'captured' || result.outcome === 'dropped' || result.outcome === 'sent'
      ? result
      : undefined;
  const problem = 'error' in result ? result.error : null;
  const message: Outcome['message'] = {
    id: messageId,
    account_id: intake.account_id,
    livemode: intake.livemode,
    intake_id: intake.id,
    chase_id: chase.id,
    channel: chase.channel,
    template: 'reminder',
    data: '{}',
    to_address: to,
    subject: email?.subject ?? null,
    text_body: text,
    html_body: email?.html ?? null,
    status: result.outcome === 'retry' ? 'failed' : result.outcome,
    provider_message_id: delivered?.providerMessageId ?? null,
    error: problem,
    locked_until: null,
    created_at: new Date(atMs).toISOString(),
    sent_at: delivered ? new Date(atMs).toISOString() : null,
  };
  if (delivered) {
    return finish(run, {
      status: 'sent',
      sent: true,
      message,
      providerMessageId: delivered.providerMessageId,
    });
  }
  return finish(run, {
    status: result.outcome === 'bounced' ? 'bounced' : 'failed',
    error: problem,
    hardBounce: result.outcome === 'bounced' ? { reason: 'hard_bounce' } : undefined,
    message,
  });
}

/** Quiet hours found at dispatch (the time zone became known after planning): due again later. */
async function postpone(run: Dispatch, untilMs: number): Promise<void> {
  const { services, world, intake, chase, lease } = run;
  await services.db.kysely.transaction().execute(async (trx) => {
    const released = await settleChase(trx, chase.id, lease, {
      status: 'scheduled',
      scheduled_for: new Date(untilMs).toISOString(),
      send_attempts: Math.max(0, chase.send_attempts - 1),
      updated_at: world.clock.now().toISOString(),
    });
    if (!released) return;
    await enqueueJob(trx, {
      accountId: world.accountId,
      livemode: world.livemode,
      kind: DISPATCH_CHASE,
      subjectId: chaseSubject(intake.id, chase.id),
      payload: { chase_id: chase.id },
      dueAt: realTimeOf(world, untilMs),
    });
  });
}

/** Records a claimed chase's outcome with its events, and plans the series' next reminder. */
async function finish(run: Dispatch, outcome: Outcome): Promise<void> {
  const { services, world, intake, chase, address, lease, settings, atMs } = run;
  const series = chase.recipient_id ?? null;
  const at = new Date(atMs).toISOString();
  await services.db.kysely.transaction().execute(async (trx) => {
    await lockIntake(trx, intake.id);
    const attemptNo = await nextAttemptNo(trx, intake.id);
    const settled = await settleChase(trx, chase.id, lease, {
      status: outcome.status,
      attempt_no: attemptNo,
      sent_at: outcome.sent || outcome.hardBounce ? at : null,
      recipient: address,
      message_id: outcome.message?.id ?? null,
      provider_message_id: outcome.providerMessageId ?? null,
      error: outcome.error ?? null,
      updated_at: at,
    });
    if (!settled) return;
    if (outcome.message) await insertMessage(trx, outcome.message);
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
      await planNextReminder(trx, world, intake, settings, { nowMs: atMs, resuming: false, series });
    }
  });
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
