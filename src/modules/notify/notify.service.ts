import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import { outstandingItems } from '../../domain/chases.js';
import { unsentAnswer, type ItemStatus } from '../../domain/intake-state.js';
import { isEmptyValue } from '../../domain/values.js';
import { enqueueJob } from '../../jobs/jobs.js';
import { raise } from '../../kernel/domain-events.js';
import { retryDelayMs } from '../../jobs/worker.js';
import { newId } from '../../lib/ids.js';
import type { AppServices } from '../../services.js';
import {
  clientItems,
  definitionOf,
  filesOf,
  findIntakeById,
  itemsOf,
  type IntakeRow,
  type ItemRow,
} from '../intakes/intakes.service.js';
import { portalUrl } from '../intakes/intakes.mappers.js';
import { realTimeOf, worldOfIntake, type World } from '../../kernel/world.js';
import { MailError } from './mailer.js';
import { DELIVER_MESSAGE, messageSubject } from './notify.jobs.js';
import {
  claimMessage,
  findMessage,
  insertMessage,
  isSuppressed,
  pendingMessageIds,
  sendingMessageIds,
  settleMessage,
  suppressAddress,
  updateMessage,
  type MessageRow,
  type Tenant,
} from './notify.repository.js';
import { renderEmail, type EmailTemplate, type MessageContext } from './notify.templates.js';
import { SmsError } from './sms.js';

declare module '../../kernel/domain-events.js' {
  interface DomainEventMap {
    /**
     * An email to an intake's client or recipient (the portal link, a revision request…, not a
     * reminder: those have chase.bounced) was refused for good; the address is suppressed.
     */
    clientEmailBounced: {
      accountId: string;
      livemode: boolean;
      intakeId: string;
      messageId: string;
      address: string;
      at: string;
    };
  }
}

/** Raises clientEmailBounced for a bounced message to a client or recipient, in the bounce's transaction. */
export async function tellEmailBounced(
  trx: Kysely<Database>,
  message: MessageRow,
  at: string,
): Promise<void> {
  if (message.channel !== 'email' || message.chase_id !== null || message.template === PREPARED_TEMPLATE)
    return;
  // A second report of one bounce tells nothing new.
  if (message.intake_id === null || message.status === 'bounced') return;
  await raise(trx, 'clientEmailBounced', {
    accountId: message.account_id,
    livemode: message.livemode === 1,
    intakeId: message.intake_id,
    messageId: message.id,
    address: message.to_address,
    at,
  });
}

/** How long a sender holds a message or chase it claimed (SMTP and SMS calls time out well before). */
export const SEND_LEASE_MS = 2 * 60_000;
/** Transient failures (connection, 4xx) are retried by the job engine's backoff; after this many, failed. */
export const MAX_SEND_ATTEMPTS = 5;

export type Channel = 'email' | 'sms';

export interface Envelope {
  messageId: string;
  channel: Channel;
  to: string;
  subject: string | null;
  text: string;
  html: string | null;
  fromName: string;
  replyTo: string | null;
  headers?: Record<string, string>;
}

/**
 * What became of one message. captured: stored in the outbox (test mode, or no SMTP_URL / SMS_URL);
 * dropped: test-mode SMS; sent: the provider accepted it; bounced: permanent email rejection;
 * failed: permanent SMS rejection; retry: a transient failure, nothing was delivered.
 */
export type Transmission =
  | { outcome: 'captured' | 'dropped' | 'sent'; providerMessageId: string | null }
  | { outcome: 'bounced' | 'failed' | 'retry'; error: string };

export function tenantOf(world: { accountId: string; livemode: boolean }): Tenant {
  return { accountId: world.accountId, livemode: world.livemode };
}

/** The sender address: SMTP_URL's `from`, else no-reply at the APP_URL host. The name is the account's. */
export function senderAddress(services: AppServices): string {
  return services.mailer.fromAddress ?? `no-reply@${new URL(services.config.appUrl).hostname}`;
}

/** Hands one message to its channel, or to the outbox when the mode or configuration says so. */
export async function transmit(
  services: AppServices,
  livemode: boolean,
  envelope: Envelope,
): Promise<Transmission> {
  if (envelope.channel === 'sms') {
    if (!livemode) return { outcome: 'dropped', providerMessageId: null };
    if (services.sms.kind === 'none') return { outcome: 'captured', providerMessageId: null };
    try {
      const sent = await services.sms.send({
        messageId: envelope.messageId,
        to: envelope.to,
        body: envelope.text,
      });
      return { outcome: 'sent', providerMessageId: sent.providerMessageId };
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      return { outcome: error instanceof SmsError && error.permanent ? 'failed' : 'retry', error: message };
    }
  }
  if (!livemode || services.mailer.kind === 'outbox') return { outcome: 'captured', providerMessageId: null };
  try {
    const sent = await services.mailer.send({
      messageId: envelope.messageId,
      from: { name: envelope.fromName, address: senderAddress(services) },
      to: envelope.to,
      replyTo: envelope.replyTo ?? undefined,
      subject: envelope.subject ?? '',
      text: envelope.text,
      html: envelope.html ?? '',
      headers: { 'Auto-Submitted': 'auto-generated', ...(envelope.headers ?? {}) },
    });
    return { outcome: 'sent', providerMessageId: sent.providerMessageId };
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    return { outcome: error instanceof MailError && error.permanent ? 'bounced' : 'retry', error: message };
  }
}

export interface Sender {
  name: string;
  email: string;
}

export async function senderOf(db: Kysely<Database>, accountId: string): Promise<Sender> {
  const account = await db
    .selectFrom('accounts')
    .select(['name', 'email'])
    .where('id', '=', accountId)
    .executeTakeFirst();
  return { name: account?.name || 'Intake', email: account?.email ?? '' };
}

/** What a message to the intake's client says, read now so it is current when it goes out. */
export async function messageContext(
  services: AppServices,
  db: Kysely<Database>,
  intake: IntakeRow,
  sender: Sender,
  extra: {
    optOutUrl?: string | null;
    revision?: { itemKey: string; note: string } | undefined;
    /** The intake's items when the caller has them already. */
    items?: readonly ItemRow[];
    /** Another recipient's name (also_notify) instead of the client's, for the greeting. */
    clientName?: string | null;
  } = {},
): Promise<MessageContext> {
  const items = clientItems(extra.items ?? (await itemsOf(db, intake.id)));
  const files = await filesOf(db, intake.id);
  const facts = items.map((row) => ({
    key: row.key,
    required: definitionOf(row).required,
    status: row.status,
    label: definitionOf(row).label,
    note: row.status === 'needs_revision' ? row.revision_note : null,
    saved: unsentAnswer({
      status: row.status as ItemStatus,
      hasContent:
        files.some((f) => f.item_key === row.key) ||
        row.secret_ciphertext !== null ||
        (row.value_json !== null && !isEmptyValue(JSON.parse(row.value_json))),
      saved_at: row.saved_at,
      submitted_at: row.submitted_at,
    }),
  }));
  const owed = outstandingItems(facts);
  const optional = facts.filter((f) => !f.required && f.status === 'pending' && !owed.includes(f));
  const revised = extra.revision ? facts.find((f) => f.key === extra.revision?.itemKey) : undefined;
  return {
    language: intake.client_language,
    accountName: sender.name,
    projectName: intake.project_name,
    clientName: extra.clientName !== undefined ? extra.clientName : intake.client_name,
    portalUrl: portalUrl(services.config.appUrl, intake.id),
    optOutUrl: extra.optOutUrl ?? null,
    dueDate: intake.due_date,
    outstanding: [
      ...owed.map((f) => ({
        label: f.label,
        required: f.required,
        note: f.note,
        owed: true,
        saved: f.saved,
      })),
      ...optional.map((f) => ({ label: f.label, required: false, note: null, owed: false, saved: f.saved })),
      // A change to a sent answer that waits for review is not owed, but it has not reached the agency.
      ...facts
        .filter((f) => f.saved && f.status === 'submitted')
        .map((f) => ({ label: f.label, required: f.required, note: null, owed: false, saved: true })),
    ],
    revision: extra.revision
      ? { itemLabel: revised?.label ?? extra.revision.itemKey, note: extra.revision.note }
      : undefined,
  };
}

/**
 * Queues an email to the intake's client inside the caller's transaction (transactional outbox):
 * the message row (pending) and the job that sends it commit with the change that caused them.
 * Returns the message id, or null when the address is suppressed (nothing is queued).
 * `to`: another recipient of the intake (also_notify) instead of the client.
 */
export async function queueEmail(
  trx: Kysely<Database>,
  world: World,
  intake: IntakeRow,
  template: EmailTemplate,
  data: Record<string, unknown> = {},
  to?: { email: string; name: string | null },
): Promise<string | null> {
  const address = to?.email ?? intake.client_email;
  if (await isSuppressed(trx, tenantOf(world), address)) return null;
  const id = newId('msg');
  const now = world.clock.now();
  await insertMessage(trx, {
    id,
    account_id: world.accountId,
    livemode: world.livemode ? 1 : 0,
    intake_id: intake.id,
    chase_id: null,
    channel: 'email',
    template,
    data: JSON.stringify(to ? { ...data, recipient_name: to.name } : data),
    to_address: address,
    subject: null,
    text_body: null,
    html_body: null,
    status: 'pending',
    provider_message_id: null,
    error: null,
    locked_until: null,
    created_at: now.toISOString(),
    sent_at: null,
  });
  await enqueueJob(trx, {
    accountId: world.accountId,
    livemode: world.livemode,
    kind: DELIVER_MESSAGE,
    subjectId: messageSubject(intake.id, id),
    payload: { message_id: id },
    dueAt: realTimeOf(world, now.getTime()),
  });
  return id;
}

/** The template name of an email written by its sender (owner notices): sent as stored, not rendered. */
export const PREPARED_TEMPLATE = 'prepared';

/**
 * Queues an email whose content the caller wrote (an owner notice to the account's people), inside the
 * caller's transaction, like queueEmail: the message row and its delivery job commit with the change.
 * Test mode captures it in the test outbox. `intakeId` (or null for an email about several intakes)
 * files it with the intake's messages. Returns the message id, or null for a suppressed address.
 */
export async function queuePreparedEmail(
  trx: Kysely<Database>,
  world: World,
  email: { to: string; intakeId: string | null; subject: string; text: string; html: string },
): Promise<string | null> {
  if (await isSuppressed(trx, tenantOf(world), email.to)) return null;
  const id = newId('msg');
  const now = world.clock.now();
  await insertMessage(trx, {
    id,
    account_id: world.accountId,
    livemode: world.livemode ? 1 : 0,
    intake_id: email.intakeId,
    chase_id: null,
    channel: 'email',
    template: PREPARED_TEMPLATE,
    data: '{}',
    to_address: email.to,
    subject: email.subject,
    text_body: email.text,
    html_body: email.html,
    status: 'pending',
    provider_message_id: null,
    error: null,
    locked_until: null,
    created_at: now.toISOString(),
    sent_at: null,
  });
  await enqueueJob(trx, {
    accountId: world.accountId,
    livemode: world.livemode,
    kind: DELIVER_MESSAGE,
    subjectId: messageSubject(email.intakeId ?? world.accountId, id),
    payload: { message_id: id },
    dueAt: realTimeOf(world, now.getTime()),
  });
  return id;
}

/** A prepared email's stored content; undefined for a templated one (rendered when sent). */
function preparedContent(row: MessageRow): { subject: string; text: string; html: string } | undefined {
  if (row.template !== PREPARED_TEMPLATE) return undefined;
  return { subject: row.subject ?? '', text: row.text_body ?? '', html: row.html_body ?? '' };
}

/**
 * The deliver_message job (and the immediate attempt after a request): claim, render, send, record.
 * A message is sent at most once: a claim left behind by a crash is recorded as failed, never resent.
 * A transient failure puts it back to pending with a new job after the engine's backoff delay.
 */
export async function deliverMessage(services: AppServices, messageId: string): Promise<void> {
  const db = services.db.kysely;
  const row = await findMessage(db, messageId);
  if (!row) return;
  const realNow = services.clock.now().getTime();
  if (row.status === 'sending' && (row.locked_until ?? 0) < realNow) {
    await updateMessage(db, row.id, {
      status: 'failed',
      error: 'The sender stopped before recording the outcome; not retried, to never send twice.',
      locked_until: null,
    });
    return;
  }
  if (row.status === 'sending') {
    // Another process is sending it now (the API's prompt attempt, or a worker): look again when
    // its claim lapses, so a crash there ends in `failed` rather than `sending` forever.
    await enqueueJob(db, {
      accountId: row.account_id,
      livemode: row.livemode === 1,
      kind: DELIVER_MESSAGE,
      subjectId: messageSubject(row.intake_id ?? row.id, row.id),
      payload: { message_id: row.id },
      dueAt: (row.locked_until ?? realNow) + 1_000,
    });
    return;
  }
  if (row.status !== 'pending') return;
  // JOB_LEASE_MS shortens it too (how soon a crashed sender's message is settled), never below 10 s.
  const jobLease = services.config.jobLeaseMs;
  const lease = realNow + (jobLease ? Math.max(10_000, jobLease) : SEND_LEASE_MS);
  if (!(await claimMessage(db, row.id, lease))) return;

  const prepared = preparedContent(row);
  const intake = row.intake_id ? await findIntakeById(db, row.intake_id) : undefined;
  const world = await worldOfIntake(db, row, { type: 'system', id: null }, services.clock);
  const now = world.clock.now().toISOString();
  if (await isSuppressed(db, tenantOf(world), row.to_address)) {
    await settleMessage(db, row.id, lease, { status: 'bounced', error: 'suppressed' });
    return;
  }
  const sender = await senderOf(db, row.account_id);
  const data = JSON.parse(row.data) as { item_key?: string; note?: string; recipient_name?: string | null };
  const revision =
    row.template === 'revision' && data.item_key
      ? { itemKey: data.item_key, note: data.note ?? '' }
      : undefined;
  const rendered =
    prepared ??
    (intake
      ? renderEmail(
          row.template as EmailTemplate,
          await messageContext(services, db, intake, sender, {
            revision,
            ...('recipient_name' in data ? { clientName: data.recipient_name ?? null } : {}),
          }),
        )
      : undefined);
  if (!rendered) {
    await settleMessage(db, row.id, lease, { status: 'failed', error: 'The intake no longer exists.' });
    return;
  }
  const result = await transmit(services, world.livemode, {
    messageId: row.id,
    channel: 'email',
    to: row.to_address,
    subject: rendered.subject,
    text: rendered.text,
    html: rendered.html,
    fromName: sender.name,
    // The account's people are writing to themselves: no reply address.
    replyTo: prepared ? null : sender.email || null,
  });
  const content = { subject: rendered.subject, text_body: rendered.text, html_body: rendered.html };
  if (result.outcome === 'retry') {
    if (row.send_attempts + 1 >= MAX_SEND_ATTEMPTS) {
      await settleMessage(db, row.id, lease, { ...content, status: 'failed', error: result.error });
      return;
    }
    // Nothing was delivered: back to pending, with a fresh job after the backoff delay.
    await db.transaction().execute(async (trx) => {
      if (!(await settleMessage(trx, row.id, lease, { status: 'pending', error: result.error }))) return;
      await enqueueJob(trx, {
        accountId: world.accountId,
        livemode: world.livemode,
        kind: DELIVER_MESSAGE,
        subjectId: messageSubject(row.intake_id ?? row.account_id, row.id),
        payload: { message_id: row.id },
        dueAt: realNow + (retryDelayMs(row.send_attempts + 1) ?? 60_000),
      });
    });
    return;
  }
  if (result.outcome === 'bounced' || result.outcome === 'failed') {
    await db.transaction().execute(async (trx) => {
      await settleMessage(trx, row.id, lease, { ...content, status: result.outcome, error: result.error });
      if (result.outcome === 'bounced') {
        await suppressAddress(trx, tenantOf(world), {
          address: row.to_address,
          reason: 'hard_bounce',
          messageId: row.id,
          at: now,
        });
        await tellEmailBounced(trx, row, now);
      }
    });
    return;
  }
  await settleMessage(db, row.id, lease, {
    ...content,
    status: result.outcome,
    provider_message_id: 'providerMessageId' in result ? result.providerMessageId : null,
    sent_at: now,
  });
}

/**
 * Sends an intake's pending messages right after the request that queued them committed, so the
 * client (and the test inbox) has them at once. Test mode waits for it (it only writes rows); live
 * mode does not hold the answer for SMTP. Any failure is left to the queued job, which retries.
 */
export async function deliverQueuedSoon(
  services: AppServices,
  world: World,
  intakeId: string,
): Promise<void> {
  const run = async () => {
    for (const id of await pendingMessageIds(services.db.kysely, intakeId)) {
      await deliverMessage(services, id).catch(() => undefined);
    }
  };
  if (world.livemode) {
    // Deliberately not awaited: the job is the guarantee, this only makes delivery prompt.
    void run().catch(() => undefined);
    return;
  }
  await run();
  await heldMessagesRecorded(services, intakeId);
}

const IN_FLIGHT_POLL_MS = 20;
const IN_FLIGHT_WAITS = 250;

/**
 * A worker woken by the commit may hold one of the intake's messages right now: test mode answers
 * once it is recorded (bounded; test mode never calls SMTP, so this takes milliseconds).
 */
async function heldMessagesRecorded(services: AppServices, intakeId: string): Promise<void> {
  for (let wait = 0; wait < IN_FLIGHT_WAITS; wait++) {
    const held = await sendingMessageIds(services.db.kysely, intakeId, services.clock.now().getTime());
    if (held.length === 0) return;
    await new Promise((resolve) => setTimeout(resolve, IN_FLIGHT_POLL_MS));
  }
}

/** Read and written by other modules through this module's surface (the rows are this module's). */
export {
  deleteMessagesOfIntake,
  findMessage,
  insertMessage,
  isSuppressed,
  liftSuppression,
  outboxMessages,
  suppressAddress,
} from './notify.repository.js';

/** A provider reported that the message bounced (or was marked as spam). */
export async function markMessageBounced(
  trx: Kysely<Database>,
  messageId: string,
  error: string,
): Promise<void> {
  await updateMessage(trx, messageId, { status: 'bounced', error });
}
