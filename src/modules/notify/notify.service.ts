import type { Kysely, Updateable } from 'kysely';
import type { Database, MessageStatus, MessagesTable } from '../../db/schema.js';
import { outstandingItems } from '../../domain/chases.js';
import { unsentAnswer } from '../../domain/intake-state.js';
import { isEmptyValue } from '../../domain/values.js';
import { messagesSent } from '../../lib/metrics.js';
import { enqueueJob, jobIdsUnder, type Job } from '../../jobs/jobs.js';
import { raise } from '../../kernel/domain-events.js';
import { retryDelayMs } from '../../jobs/worker.js';
import { newId } from '../../lib/ids.js';
import type { AppServices } from '../../services.js';
import {
  clientItems,
  filesOf,
  findIntakeById,
  itemsOf,
  type FileRow,
  type IntakeRow,
  type ItemRow,
} from '../intakes/intakes.service.js';
import { emailIdentities, emailIdentity, NO_EMAIL_BRANDING } from '../accounts/branding.js';
import { portalUrl } from '../intakes/intakes.mappers.js';
import { realTimeOf, worldOfIntake, type World } from '../../kernel/world.js';
import { MailError } from './mailer.js';
import { DELIVER_MESSAGE, messageSubject } from './notify.jobs.js';
import {
  findMessage,
  insertMessage,
  isSuppressed,
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
  message: Pick<
    MessageRow,
    | 'id'
    | 'account_id'
    | 'livemode'
    | 'intake_id'
    | 'chase_id'
    | 'channel'
    | 'template'
    | 'status'
    | 'to_address'
  >,
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

/**
 * Hands one message to its channel, or to the outbox when the mode or configuration says so.
 * `signal` (the sending job's) abandons the provider call: the outcome is then thrown, unknown.
 */
export async function transmit(
  services: AppServices,
  livemode: boolean,
  envelope: Envelope,
  signal?: AbortSignal,
): Promise<Transmission> {
  const transmission = await handOver(services, livemode, envelope, signal);
  messagesSent.inc({ channel: envelope.channel, outcome: transmission.outcome });
  return transmission;
}

async function handOver(
  services: AppServices,
  livemode: boolean,
  envelope: Envelope,
  signal?: AbortSignal,
): Promise<Transmission> {
  if (envelope.channel === 'sms') {
    if (!livemode) return { outcome: 'dropped', providerMessageId: null };
    if (services.sms.kind === 'none') return { outcome: 'captured', providerMessageId: null };
    try {
      const sent = await services.sms.send(
        { messageId: envelope.messageId, to: envelope.to, body: envelope.text },
        signal,
      );
      return { outcome: 'sent', providerMessageId: sent.providerMessageId };
    } catch (error) {
      // Abandoned mid-request: the provider may have taken it; no retry may follow.
      if (signal?.aborted) throw error;
      const message = error instanceof Error ? error.message : String(error);
      return { outcome: error instanceof SmsError && error.permanent ? 'failed' : 'retry', error: message };
    }
  }
  if (!livemode || services.mailer.kind === 'outbox') return { outcome: 'captured', providerMessageId: null };
  try {
    const sent = await services.mailer.send(
      {
        messageId: envelope.messageId,
        from: { name: envelope.fromName, address: senderAddress(services) },
        to: envelope.to,
        replyTo: envelope.replyTo ?? undefined,
        subject: envelope.subject ?? '',
        text: envelope.text,
        html: envelope.html ?? '',
        headers: { 'Auto-Submitted': 'auto-generated', ...(envelope.headers ?? {}) },
      },
      signal,
    );
    return { outcome: 'sent', providerMessageId: sent.providerMessageId };
  } catch (error) {
    // Abandoned mid-send: the relay may have accepted it; no retry may follow.
    if (error instanceof MailError && error.aborted) throw error;
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
  return senderFrom(account);
}

/** Who an account's emails come from (its name, else "Intake"), from its row (undefined: none). */
function senderFrom(account: { name: string; email: string } | undefined): Sender {
  return { name: account?.name || 'Intake', email: account?.email ?? '' };
}

/** Who an account's emails come from, and their branding: one read of the account (emailIdentity). */
export async function senderAndBrandingOf(
  services: AppServices,
  db: Kysely<Database>,
  accountId: string,
): Promise<{ sender: Sender; branding: MessageContext['branding'] }> {
  const { account, branding } = await emailIdentity(db, accountId, services.config.appUrl);
  return { sender: senderFrom(account), branding };
}

/** senderAndBrandingOf for several accounts, in one statement: every account asked for has an entry. */
export async function sendersAndBrandingOf(
  services: AppServices,
  db: Kysely<Database>,
  accountIds: readonly string[],
): Promise<Map<string, { sender: Sender; branding: MessageContext['branding'] }>> {
  const identities = await emailIdentities(db, accountIds, services.config.appUrl);
  return new Map(
    accountIds.map((id) => {
      const identity = identities.get(id);
      return [
        id,
        { sender: senderFrom(identity?.account), branding: identity?.branding ?? NO_EMAIL_BRANDING },
      ];
    }),
  );
}

/** What messageContext reads besides the intake and its items, and the sender read with the branding. */
export interface ContextReads {
  files: readonly FileRow[];
  branding: MessageContext['branding'];
  sender: Sender;
}

/**
 * Reads what messageContext needs besides the intake, its items and the sender, side by side (on
 * PostgreSQL one round trip's wait instead of one per read): for a caller that reads its own rows at
 * the same time and hands the result to messageContext (`extra.reads`).
 */
export async function readContext(
  services: AppServices,
  db: Kysely<Database>,
  accountId: string,
  intakeId: string,
): Promise<ContextReads> {
  const [files, { sender, branding }] = await Promise.all([
    filesOf(db, intakeId),
    senderAndBrandingOf(services, db, accountId),
  ]);
  return { files, branding, sender };
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
    /** readContext's answer for this intake and its account, when the caller has it already. */
    reads?: ContextReads;
  } = {},
): Promise<MessageContext> {
  const [rows, { files, branding }] = await Promise.all([
    extra.items ?? itemsOf(db, intake.id),
    extra.reads ?? readContext(services, db, intake.account_id, intake.id),
  ]);
  const items = clientItems(rows);
  const facts = items.map((row) => ({
    key: row.key,
    required: row.definition.required,
    status: row.status,
    label: row.definition.label,
    note: row.status === 'needs_revision' ? row.revision_note : null,
    saved: unsentAnswer({
      status: row.status,
      hasContent:
        files.some((f) => f.item_key === row.key) ||
        row.secret_ciphertext !== null ||
        (row.value !== null && !isEmptyValue(row.value)),
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
    branding,
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
    created_at: now.toISOString(),
    sent_at: null,
  });
  await enqueueDelivery(trx, world, intake.id, id, realTimeOf(world, now.getTime()));
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
  email: {
    to: string;
    intakeId: string | null;
    subject: string;
    text: string;
    html: string;
    /** The client's opt-out link, sent as List-Unsubscribe (the email's footer shows it too). */
    unsubscribeUrl?: string;
  },
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
    data: JSON.stringify(email.unsubscribeUrl ? { unsubscribe_url: email.unsubscribeUrl } : {}),
    to_address: email.to,
    subject: email.subject,
    text_body: email.text,
    html_body: email.html,
    status: 'pending',
    provider_message_id: null,
    error: null,
    created_at: now.toISOString(),
    sent_at: null,
  });
  await enqueueDelivery(trx, world, email.intakeId ?? world.accountId, id, realTimeOf(world, now.getTime()));
  return id;
}

/** A prepared email's stored content; undefined for a templated one (rendered when sent). */
function preparedContent(
  row: Pick<MessageRow, 'template' | 'subject' | 'text_body' | 'html_body'>,
): { subject: string; text: string; html: string } | undefined {
  if (row.template !== PREPARED_TEMPLATE) return undefined;
  return { subject: row.subject ?? '', text: row.text_body ?? '', html: row.html_body ?? '' };
}

/** Why a message whose job was given up is recorded failed: its send may have reached the relay. */
export const CUT_OFF_ERROR =
  'The send stopped without a known outcome (its sender died or failed mid-send); not retried, to never send twice.';

/**
 * The deliver_message job: render, send, record. The job is the message's one sender (its lease the
 * only claim), and the outcome is recorded with the end of the job in one transaction, so a message
 * is recorded once, by the worker that holds it. At most once: the kind is never run twice for one
 * job (see DELIVER_MESSAGE); a transient failure with nothing delivered ends this job and queues a
 * new one after the engine's backoff delay.
 */
export async function deliverMessage(services: AppServices, job: Job<{ message_id: string }>): Promise<void> {
  const db = services.db.kysely;
  const row = await findMessage(db, job.payload.message_id);
  if (!row || row.status !== 'pending') return;
  const prepared = preparedContent(row);
  const intake = row.intake_id ? await findIntakeById(db, row.intake_id) : undefined;
  const record = (patch: Updateable<MessagesTable>, more?: (trx: Kysely<Database>) => Promise<void>) =>
    job.finish(async (trx) => {
      if ((await settleMessage(trx, row.id, patch)) && more) await more(trx);
    });
  const world = await worldOfIntake(db, row, { type: 'system', id: null }, services.clock);
  const now = world.clock.now().toISOString();
  if (await isSuppressed(db, tenantOf(world), row.to_address)) {
    await record({ status: 'bounced', error: 'suppressed' });
    return;
  }
  // A templated email reads its sender with what it shows, side by side (one read of the account);
  // a prepared one needs the sender alone.
  const [reads, items] =
    !prepared && intake
      ? await Promise.all([readContext(services, db, row.account_id, intake.id), itemsOf(db, intake.id)])
      : [undefined, undefined];
  const sender = reads?.sender ?? (await senderOf(db, row.account_id));
  const { data } = row;
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
            ...(reads && items ? { reads, items } : {}),
          }),
        )
      : undefined);
  if (!rendered) {
    await record({ status: 'failed', error: 'The intake no longer exists.' });
    return;
  }
  job.beginIrreversible();
  const result = await transmit(
    services,
    world.livemode,
    {
      messageId: row.id,
      channel: 'email',
      to: row.to_address,
      subject: rendered.subject,
      text: rendered.text,
      html: rendered.html,
      fromName: sender.name,
      // The account's people are writing to themselves: no reply address.
      replyTo: prepared ? null : sender.email || null,
      headers: data.unsubscribe_url
        ? {
            'List-Unsubscribe': `<${data.unsubscribe_url}>`,
            'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click',
          }
        : {},
    },
    job.signal,
  );
  const content = { subject: rendered.subject, text_body: rendered.text, html_body: rendered.html };
  if (result.outcome === 'retry') {
    const failures = row.send_attempts + 1;
    if (failures >= MAX_SEND_ATTEMPTS) {
      await record({ ...content, status: 'failed', error: result.error, send_attempts: failures });
      return;
    }
    // Nothing was delivered: still pending, with a new job after the backoff delay.
    await job.finish(async (trx) => {
      await updateMessage(trx, row.id, { error: result.error, send_attempts: failures });
      await enqueueDelivery(
        trx,
        world,
        row.intake_id ?? row.account_id,
        row.id,
        services.clock.now().getTime() + (retryDelayMs(failures) ?? 60_000),
      );
    });
    return;
  }
  if (result.outcome === 'bounced' || result.outcome === 'failed') {
    const outcome = result.outcome;
    await record({ ...content, status: outcome, error: result.error }, async (trx) => {
      if (outcome !== 'bounced') return;
      await suppressAddress(trx, tenantOf(world), {
        address: row.to_address,
        reason: 'hard_bounce',
        messageId: row.id,
        at: now,
      });
      await tellEmailBounced(trx, row, now);
    });
    return;
  }
  await record({
    ...content,
    status: result.outcome,
    provider_message_id: 'providerMessageId' in result ? result.providerMessageId : null,
    sent_at: now,
  });
}

/** DELIVER_MESSAGE's give-up hook: a message whose send may have reached the relay is never sent again. */
export async function recordCutOffMessage(trx: Kysely<Database>, messageId: string): Promise<void> {
  await settleMessage(trx, messageId, { status: 'failed', error: CUT_OFF_ERROR });
}

function enqueueDelivery(
  trx: Kysely<Database>,
  world: World,
  intakeId: string,
  messageId: string,
  dueAt: number,
): Promise<string> {
  return enqueueJob(trx, {
    accountId: world.accountId,
    livemode: world.livemode,
    kind: DELIVER_MESSAGE,
    subjectId: messageSubject(intakeId, messageId),
    payload: { message_id: messageId },
    dueAt,
  });
}

/**
 * After a request that queued messages for the intake committed. Test mode runs their jobs now, in
 * this request, through the job engine (test mode only writes the outbox), so the answer comes with
 * the outbox filled; a job this process's worker already runs is waited for, one another process
 * took is not. Live mode does not hold the answer for SMTP: the jobs are due now, and this process's
 * worker is nudged (on PostgreSQL every worker is woken at the commit).
 */
export async function sendQueuedMessages(
  services: AppServices,
  world: World,
  intakeId: string,
): Promise<void> {
  if (world.livemode) {
    services.jobs.nudge();
    return;
  }
  const due = await jobIdsUnder(services.db.kysely, {
    subjectId: intakeId,
    kind: DELIVER_MESSAGE,
    dueBy: services.clock.now().getTime(),
  });
  if (due.length > 0) await services.jobs.runNow(due);
}

/** Read and written by other modules through this module's surface (the rows are this module's). */
export {
  deleteMessagesOfIntake,
  findMessage,
  isSuppressed,
  liftSuppression,
  suppressedAmong,
  outboxMessages,
  suppressAddress,
} from './notify.repository.js';

/**
 * A message sent outside a deliver_message job, in its final state: a reminder (its chase's dispatch
 * sent it) or a sign-in link (sent in the request). Kept so the outbox, bounce reports and the chase
 * history find it.
 */
export interface MessageCopy {
  id: string;
  accountId: string;
  livemode: boolean;
  intakeId: string | null;
  chaseId: string | null;
  channel: Channel;
  template: string;
  to: string;
  subject: string | null;
  text: string;
  html: string | null;
  status: Exclude<MessageStatus, 'pending'>;
  providerMessageId: string | null;
  error: string | null;
  createdAt: string;
  sentAt: string | null;
}

/** Records a message sent outside a deliver_message job (see MessageCopy), in the caller's transaction. */
export async function recordMessageCopy(db: Kysely<Database>, copy: MessageCopy): Promise<void> {
  await insertMessage(db, {
    id: copy.id,
    account_id: copy.accountId,
    livemode: copy.livemode ? 1 : 0,
    intake_id: copy.intakeId,
    chase_id: copy.chaseId,
    channel: copy.channel,
    template: copy.template,
    data: '{}',
    to_address: copy.to,
    subject: copy.subject,
    text_body: copy.text,
    html_body: copy.html,
    status: copy.status,
    provider_message_id: copy.providerMessageId,
    error: copy.error,
    created_at: copy.createdAt,
    sent_at: copy.sentAt,
  });
}

/** A provider reported that the message bounced (or was marked as spam). */
export async function markMessageBounced(
  trx: Kysely<Database>,
  messageId: string,
  error: string,
): Promise<void> {
  await updateMessage(trx, messageId, { status: 'bounced', error });
}
