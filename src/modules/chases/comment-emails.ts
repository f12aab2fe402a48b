import type { Kysely } from 'kysely';
import { z } from 'zod';
import type { Database } from '../../db/schema.js';
import { commentEmailDueAt, sendableAt } from '../../domain/comment-emails.js';
import { isQuietTime } from '../../domain/chases.js';
import { isOwnerItem } from '../../domain/items.js';
import { supportedLanguage, translator } from '../../i18n/index.js';
import { defineJob, enqueueJob, type Job } from '../../jobs/jobs.js';
import { realTimeOf, worldOfIntake, type World } from '../../kernel/world.js';
import type { AppServices } from '../../services.js';
import { markEmailed, waitingOwnerComments } from '../comments/comments.service.js';
import {
  clientItems,
  findIntakeById,
  itemsOf,
  lockIntake,
  type IntakeRow,
} from '../intakes/intakes.service.js';
import { portalUrl } from '../intakes/intakes.mappers.js';
import { emailLayout, type EmailBlock } from '../notify/email-layout.js';
import { queuePreparedEmail, senderAndBrandingOf } from '../notify/notify.service.js';
import { settingsOf } from './chases.plan.js';
import { optOutUrl } from './chases.dispatch.js';
import { findPlan } from './chases.repository.js';

/**
 * The owner's comments reach the client by email: one email per intake for the comments of a few
 * minutes (the first comment plans the job, keyed by the intake; the others join it), with the portal
 * link. Like reminders, nothing goes to a client who opted out, and nothing in their quiet hours.
 */
export const CLIENT_COMMENT_EMAIL = defineJob('client_comment_email', z.object({ intake_id: z.string() }));

const SYSTEM = { type: 'system', id: null } as const;

function batchKey(intakeId: string): string {
  return `client_comment_email:${intakeId}`;
}

async function planEmail(
  trx: Kysely<Database>,
  world: World,
  intake: IntakeRow,
  atMs: number,
): Promise<void> {
  await enqueueJob(trx, {
    accountId: world.accountId,
    livemode: world.livemode,
    kind: CLIENT_COMMENT_EMAIL,
    subjectId: intake.id,
    payload: { intake_id: intake.id },
    dueAt: realTimeOf(world, atMs),
    uniqueKey: batchKey(intake.id),
  });
}

/** Subscriber of ownerCommented: plans the intake's comment email unless one is planned already. */
export async function planCommentEmail(
  trx: Kysely<Database>,
  world: World,
  intake: IntakeRow,
): Promise<void> {
  const settings = settingsOf(intake, await findPlan(trx, intake.id));
  await planEmail(trx, world, intake, commentEmailDueAt(world.clock.now().getTime(), settings));
}

/**
 * The client_comment_email job: the intake's waiting comments become one email to the client. The
 * job ends first in its transaction, so a comment committed after the waiting ones were read plans
 * an email of its own.
 */
export async function runCommentEmail(services: AppServices, job: Job<{ intake_id: string }>): Promise<void> {
  const db = services.db.kysely;
  const found = await findIntakeById(db, job.payload.intake_id);
  if (!found) return;
  const world = await worldOfIntake(db, found, SYSTEM, services.clock);
  await job.finish(async (trx) => {
    const intake = await lockIntake(trx, found.id);
    if (!intake) return;
    const items = await itemsOf(trx, intake.id);
    // The client is told only of what their page shows: never a comment on a decision (an owner item,
    // which is settled as told), and a comment on an item an answer hides waits until it applies again.
    const shown = new Set(clientItems(items).map((row) => row.key));
    const owners = new Set(items.filter((row) => isOwnerItem(row.definition)).map((row) => row.key));
    const all = await waitingOwnerComments(trx, world, intake.id);
    const waiting = all.filter((c) => shown.has(c.item_key));
    const settled = all.filter((c) => shown.has(c.item_key) || owners.has(c.item_key));
    const now = world.clock.now();
    const plan = await findPlan(trx, intake.id);
    const settings = settingsOf(intake, plan);
    const closed = intake.status === 'archived' || intake.purged_at !== null;
    // An opted-out client reads the comments on their page; nothing is emailed, nothing piles up.
    if (waiting.length > 0 && !closed && !plan?.opted_out_at) {
      if (settings.respectQuietHours && isQuietTime(now.getTime(), settings.timeZone)) {
        await planEmail(trx, world, intake, sendableAt(now.getTime(), settings));
        return;
      }
      const labels = new Map(items.map((row) => [row.key, row.definition.label]));
      const email = await commentEmail(
        services,
        trx,
        intake,
        waiting.map((c) => ({
          label: labels.get(c.item_key) ?? c.item_key,
          body: c.body,
        })),
      );
      await queuePreparedEmail(trx, world, { to: intake.client_email, intakeId: intake.id, ...email });
    }
    await markEmailed(
      trx,
      settled.map((c) => c.id),
      now.toISOString(),
    );
  });
}

async function commentEmail(
  services: AppServices,
  db: Kysely<Database>,
  intake: IntakeRow,
  comments: { label: string; body: string }[],
): Promise<{ subject: string; text: string; html: string; unsubscribeUrl: string }> {
  const t = translator(intake.client_language, 'email');
  // The reminders' opt-out: it stops reminders and these emails alike (the job reads the same opt-out).
  const unsubscribeUrl = optOutUrl(services, intake.id);
  const { sender, branding } = await senderAndBrandingOf(services, db, intake.account_id);
  const vars = { account: sender.name, project: intake.project_name };
  const subject = t('comments.subject', vars);
  const intro = t('comments.intro', { ...vars, count: comments.length });
  const url = portalUrl(services.config.appUrl, intake.id);
  const blocks: EmailBlock[] = [
    { kind: 'paragraph', text: intro },
    ...comments.map((c) => ({ kind: 'note' as const, title: c.label, text: c.body })),
    { kind: 'button', label: t('comments.reply'), url, hint: t('portal_hint') },
  ];
  const { html, text } = emailLayout({
    language: supportedLanguage(intake.client_language),
    subject,
    preheader: intro,
    branding: { accountName: sender.name, ...branding },
    greeting: intake.client_name ? t('greeting', { name: intake.client_name }) : t('greeting_anonymous'),
    blocks,
    signature: [t('thanks_sign'), sender.name],
    footer: [t('footer_personal'), t('footer_sender', { account: sender.name })],
    footerLink: {
      label: t('comments.opt_out_link'),
      url: unsubscribeUrl,
      text: t('comments.opt_out', { url: unsubscribeUrl }),
    },
  });
  return { subject, text, html, unsubscribeUrl };
}
