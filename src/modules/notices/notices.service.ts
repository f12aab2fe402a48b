import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import { isTimeZone } from '../../domain/chases.js';
import { ApiError } from '../../http/errors.js';
import {
  BATCH_DELAY_MS,
  defaultFrequency,
  digestWindow,
  isNoticeFrequency,
  nextDigestAt,
  noticeOfEvent,
  peopleAt,
  summarize,
  type Notice,
  type NoticeFrequency,
} from '../../domain/owner-notices.js';
import { supportedLanguage } from '../../i18n/index.js';
import { cancelJobs, enqueueJob, type Job } from '../../jobs/jobs.js';
import type { DomainEventMap } from '../../kernel/domain-events.js';
import type { RecordedEvent } from '../../kernel/public-events.js';
import { realTimeOf, worldOfIntake, type World } from '../../kernel/world.js';
import { systemClock } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import type { AppServices } from '../../services.js';
import { accountOf } from '../accounts/accounts.service.js';
import { auditInTransaction } from '../audit/audit.scope.js';
import { findIntakeById, itemsOf } from '../intakes/intakes.service.js';
import { queuePreparedEmail } from '../notify/notify.service.js';
import { listUsers } from '../sessions/sessions.service.js';
import {
  OWNER_NOTICE_BATCH,
  OWNER_NOTICE_DIGEST,
  batchKey,
  digestKey,
  digestSubject,
} from './notices.jobs.js';
import {
  insertNotice,
  noticesBetween,
  pruneNotices,
  saveSetting,
  settingOf,
  settingsOf,
  takeWaitingNotices,
  type OwnerNoticeRow,
} from './notices.repository.js';
import { digestEmail, intakeNoticeEmail, type IntakeFacts, type OwnerFacts } from './notices.templates.js';

/**
 * Owner notifications: what happened to an intake (answers sent, ready for review, complete, a
 * bounce, a stall, an overdue date) told to the account's people by email, each in the way they chose.
 * A notice is written with the public event that causes it (same transaction); an intake's notices
 * are sent as one email a minute later (one email per sending), or in the person's daily digest.
 */

const SYSTEM = { type: 'system', id: null } as const;
const DAY_MS = 86_400_000;

/** Writes a notice and plans its intake's batch, in the transaction of what it tells. */
async function addNotice(
  trx: Kysely<Database>,
  notice: Notice & { accountId: string; livemode: boolean; intakeId: string; eventId: string },
): Promise<void> {
  await insertNotice(trx, {
    id: newId('ntc'),
    account_id: notice.accountId,
    livemode: notice.livemode ? 1 : 0,
    intake_id: notice.intakeId,
    event_id: notice.eventId,
    type: notice.type,
    data: notice.data,
    occurred_at: notice.occurredAt,
    batched_at: null,
  });
  // The first notice of a burst plans the batch; the others join it (one job per intake at a time).
  // Job times are real time; the delay is the same in both modes' clocks.
  await enqueueJob(trx, {
    accountId: notice.accountId,
    livemode: notice.livemode,
    kind: OWNER_NOTICE_BATCH,
    subjectId: notice.intakeId,
    payload: { intake_id: notice.intakeId },
    dueAt: systemClock.now().getTime() + BATCH_DELAY_MS,
    uniqueKey: batchKey(notice.intakeId),
  });
}

/** Subscriber of publicEventRecorded: the notice an event of an intake is worth, if any. */
export async function recordOwnerNotice(trx: Kysely<Database>, event: RecordedEvent): Promise<void> {
  const notice = noticeOfEvent(event.type, event.payload);
  const intakeId = event.payload.intake_id;
  if (!notice || typeof intakeId !== 'string') return;
  await addNotice(trx, {
    ...notice,
    occurredAt: event.occurredAt,
    accountId: event.accountId,
    livemode: event.livemode,
    intakeId,
    eventId: event.id,
  });
}

/** Subscriber of clientEmailBounced: the portal link (or another email that is not a reminder) bounced. */
export async function recordBouncedEmailNotice(
  trx: Kysely<Database>,
  bounce: DomainEventMap['clientEmailBounced'],
): Promise<void> {
  await addNotice(trx, {
    type: 'message.bounced',
    data: { address: bounce.address },
    occurredAt: bounce.at,
    accountId: bounce.accountId,
    livemode: bounce.livemode,
    intakeId: bounce.intakeId,
    eventId: bounce.messageId,
  });
}

function noticeOf(row: OwnerNoticeRow): Notice {
  return {
    type: row.type,
    data: row.data,
    occurredAt: row.occurred_at,
  };
}

/** The account's people with their choices: today its dashboard users (the account holder first). */
async function peopleOf(db: Kysely<Database>, accountId: string) {
  const [users, settings] = await Promise.all([listUsers(db, accountId), settingsOf(db, accountId)]);
  const chosen = new Map<string, NoticeFrequency>();
  const zones = new Map<string, string | null>();
  for (const row of settings) {
    if (isNoticeFrequency(row.frequency)) chosen.set(row.email, row.frequency);
    zones.set(row.email, row.time_zone);
  }
  return {
    people: users.map((u) => ({ email: u.email.toLowerCase(), role: u.role })),
    chosen,
    zoneOf: (email: string) => zones.get(email) ?? null,
  };
}

function ownerFacts(
  services: AppServices,
  account: { name: string; default_language: string },
  email: string,
  livemode: boolean,
): OwnerFacts {
  return {
    language: supportedLanguage(account.default_language),
    accountName: account.name,
    email,
    livemode,
    settingsUrl: `${services.config.appUrl}/dashboard/settings#notifications`,
  };
}

async function intakeFacts(
  services: AppServices,
  db: Kysely<Database>,
  intakeId: string,
): Promise<IntakeFacts | undefined> {
  const intake = await findIntakeById(db, intakeId);
  // An archived intake is out of the owner's way: news of it that was still waiting is dropped.
  if (!intake || intake.status === 'archived') return undefined;
  const labels = new Map((await itemsOf(db, intakeId)).map((row) => [row.key, row.definition.label]));
  return {
    projectName: intake.project_name,
    client: intake.client_name || intake.client_email,
    labelOf: (key) => labels.get(key) ?? key,
    dashboardUrl: `${services.config.appUrl}/dashboard/intakes/${intake.id}`,
  };
}

/**
 * The owner_notice_batch job: the intake's waiting notices become one email to each person who
 * wants every sending. The job ends first, in the same transaction, so a notice committed after the
 * waiting ones were read plans a batch of its own.
 */
export async function runNoticeBatch(services: AppServices, job: Job<{ intake_id: string }>): Promise<void> {
  const db = services.db.kysely;
  const intake = await findIntakeById(db, job.payload.intake_id);
  if (!intake) return;
  const world = await worldOfIntake(db, intake, SYSTEM, services.clock);
  await job.finish(async (trx) => {
    const now = world.clock.now();
    const notices = (await takeWaitingNotices(trx, world, intake.id, now.toISOString())).map(noticeOf);
    // Batched notices older than any digest window are not needed any more.
    await pruneNotices(trx, world, new Date(now.getTime() - 3 * DAY_MS).toISOString());
    if (notices.length === 0) return;
    const { people, chosen } = await peopleOf(trx, intake.account_id);
    const recipients = peopleAt(people, chosen, 'each');
    const account = await accountOf(trx, intake.account_id);
    const facts = await intakeFacts(services, trx, intake.id);
    if (recipients.length === 0 || !account || !facts) return;
    const summary = summarize(notices);
    for (const person of recipients) {
      const email = intakeNoticeEmail(
        ownerFacts(services, account, person.email, world.livemode),
        facts,
        summary,
      );
      await queuePreparedEmail(trx, world, { to: person.email, intakeId: intake.id, ...email });
    }
  });
}

function dayLabel(atMs: number, language: string, timeZone: string | null): string {
  return new Intl.DateTimeFormat(supportedLanguage(language), {
    dateStyle: 'long',
    timeZone: timeZone ?? 'UTC',
  }).format(new Date(atMs));
}

/** The world of an account in one mode, for work that belongs to no intake. */
function accountWorld(services: AppServices, db: Kysely<Database>, accountId: string, livemode: boolean) {
  return worldOfIntake(db, { account_id: accountId, livemode: livemode ? 1 : 0 }, SYSTEM, services.clock);
}

async function planDigest(
  trx: Kysely<Database>,
  world: World,
  email: string,
  timeZone: string | null,
  afterMs: number,
): Promise<void> {
  const at = nextDigestAt(afterMs, timeZone);
  await enqueueJob(trx, {
    accountId: world.accountId,
    livemode: world.livemode,
    kind: OWNER_NOTICE_DIGEST,
    subjectId: digestSubject(world.accountId, email),
    payload: { email, at: new Date(at).toISOString() },
    dueAt: realTimeOf(world, at),
    uniqueKey: digestKey(world.accountId, world.livemode, email),
  });
}

/**
 * The owner_notice_digest job: the day's notices of every intake in one email to one person, then the
 * next day's digest, while the person still chooses it (and still belongs to the account).
 */
export async function runNoticeDigest(services: AppServices, job: Job<{ email: string; at: string }>) {
  const db = services.db.kysely;
  const world = await accountWorld(services, db, job.accountId, job.livemode);
  const { email } = job.payload;
  const atMs = Date.parse(job.payload.at);
  await job.finish(async (trx) => {
    const { people, chosen, zoneOf } = await peopleOf(trx, job.accountId);
    const person = peopleAt(people, chosen, 'daily').find((p) => p.email === email);
    const account = await accountOf(trx, job.accountId);
    if (!person || !account) return;
    const timeZone = zoneOf(email);
    const window = digestWindow(atMs, timeZone);
    const notices = await noticesBetween(
      trx,
      world,
      new Date(window.fromMs).toISOString(),
      new Date(window.toMs).toISOString(),
    );
    const byIntake = new Map<string, Notice[]>();
    for (const row of notices)
      byIntake.set(row.intake_id, [...(byIntake.get(row.intake_id) ?? []), noticeOf(row)]);
    const sections = [];
    for (const [intakeId, list] of byIntake) {
      const facts = await intakeFacts(services, trx, intakeId);
      if (facts) sections.push({ intake: facts, summary: summarize(list) });
    }
    if (sections.length > 0) {
      const owner = ownerFacts(services, account, email, world.livemode);
      const content = digestEmail(owner, dayLabel(atMs, owner.language, timeZone), sections);
      await queuePreparedEmail(trx, world, { to: email, intakeId: null, ...content });
    }
    // The next 08:00 after now: a worker that was down for days sends this digest, not one per missed day.
    await planDigest(trx, world, email, timeZone, Math.max(atMs, world.clock.now().getTime()));
  });
}

/** A person's notification choice as the settings page shows it. */
export interface NoticeSetting {
  frequency: NoticeFrequency;
  timeZone: string | null;
}

export async function noticeSettingOf(
  db: Kysely<Database>,
  accountId: string,
  person: { email: string; role: string },
): Promise<NoticeSetting> {
  const row = await settingOf(db, accountId, person.email);
  return {
    frequency: row && isNoticeFrequency(row.frequency) ? row.frequency : defaultFrequency(person.role),
    timeZone: row?.time_zone ?? null,
  };
}

/**
 * Saves a person's choice (one transaction, with the dashboard's audit entry) and (re)plans their
 * daily digest in both modes, or calls it off.
 */
export async function saveNoticeSetting(
  services: AppServices,
  accountId: string,
  email: string,
  setting: NoticeSetting,
): Promise<void> {
  if (setting.timeZone !== null && !isTimeZone(setting.timeZone)) {
    throw new ApiError('invalid_request', `time_zone must be an IANA time zone such as Europe/Paris.`);
  }
  const db = services.db.kysely;
  const address = email.toLowerCase();
  const worlds = await Promise.all([true, false].map((live) => accountWorld(services, db, accountId, live)));
  await db.transaction().execute(async (trx) => {
    await saveSetting(trx, {
      account_id: accountId,
      email: address,
      frequency: setting.frequency,
      time_zone: setting.timeZone,
      updated_at: services.clock.now().toISOString(),
    });
    await cancelJobs(trx, { subjectId: digestSubject(accountId, address), kind: OWNER_NOTICE_DIGEST });
    if (setting.frequency === 'daily') {
      for (const world of worlds) {
        await planDigest(trx, world, address, setting.timeZone, world.clock.now().getTime());
      }
    }
    await auditInTransaction(trx);
  });
}

/** Read and written by other modules through this module's surface (the rows are this module's). */
export { deleteNoticesOfIntake } from './notices.repository.js';
