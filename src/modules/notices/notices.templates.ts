import { headlineOf, type NoticeSummary } from '../../domain/owner-notices.js';
import { supportedLanguage, translator } from '../../i18n/index.js';
import { formatDueDate } from '../notify/notify.templates.js';
import { layoutEmail, type EmailContent, type EmailSection } from './notices.layout.js';

/** One intake as an owner email names it: labels, not keys. */
export interface IntakeFacts {
  projectName: string;
  /** The client's name, else their address. */
  client: string;
  /** An item's label by key (the key itself when the item is gone). */
  labelOf: (key: string) => string;
  dashboardUrl: string;
}

/** Who the email goes to and for which account: the language, the footer and the settings link. */
export interface OwnerFacts {
  language: string;
  accountName: string;
  email: string;
  livemode: boolean;
  settingsUrl: string;
}

function sectionOf(owner: OwnerFacts, intake: IntakeFacts, summary: NoticeSummary): EmailSection {
  const t = translator(owner.language, 'email');
  const vars = { project: intake.projectName, client: intake.client };
  const paragraphs: string[] = [];
  let list: EmailSection['list'] = null;
  if (summary.submittedKeys.length > 0) {
    list = { title: t('owner_notice.answers', vars), items: summary.submittedKeys.map(intake.labelOf) };
  }
  if (summary.readyForReview) paragraphs.push(t('owner_notice.ready', vars));
  if (summary.complete) paragraphs.push(t('owner_notice.complete', vars));
  for (const address of summary.bounced) paragraphs.push(t('owner_notice.bounced', { ...vars, address }));
  if (summary.stalled) paragraphs.push(t('owner_notice.stalled', vars));
  if (summary.overdue) {
    const date = summary.overdue.dueDate ? formatDueDate(summary.overdue.dueDate, owner.language) : '';
    paragraphs.push(t('owner_notice.overdue', { ...vars, date }));
    // The answers that arrived come first; the missing ones are named when nothing arrived.
    if (!list && summary.overdue.missingKeys.length > 0) {
      list = { title: t('owner_notice.missing'), items: summary.overdue.missingKeys.map(intake.labelOf) };
    }
  }
  for (const comment of summary.comments) {
    const body = comment.body.length > 1000 ? `${comment.body.slice(0, 999)}…` : comment.body;
    paragraphs.push(t('owner_notice.comment', { ...vars, item: intake.labelOf(comment.itemKey), body }));
  }
  for (const address of summary.optedOut) paragraphs.push(t('owner_notice.opted_out', { ...vars, address }));
  return {
    heading: intake.projectName,
    paragraphs,
    list,
    button: {
      label: t('owner_notice.open_dashboard'),
      url: intake.dashboardUrl,
      hint: t('owner_notice.link_hint', { url: intake.dashboardUrl }),
    },
  };
}

function footerOf(owner: OwnerFacts): Pick<EmailContent, 'footer' | 'settings'> {
  const t = translator(owner.language, 'email');
  return {
    footer: [
      ...(owner.livemode ? [] : [t('owner_notice.test_mode')]),
      t('owner_notice.why', { email: owner.email, account: owner.accountName }),
    ],
    settings: { label: t('owner_notice.settings'), url: owner.settingsUrl },
  };
}

/** The email of one intake's sending (or one bounce, stall, overdue date…), for one person. */
export function intakeNoticeEmail(owner: OwnerFacts, intake: IntakeFacts, summary: NoticeSummary) {
  const t = translator(owner.language, 'email');
  const headline = headlineOf(summary) ?? 'answers';
  const address = summary.bounced[0] ?? summary.optedOut[0] ?? '';
  const subject = t(`owner_notice.subject_${headline}`, {
    project: intake.projectName,
    client: intake.client,
    address,
  });
  return layoutEmail({
    language: supportedLanguage(owner.language),
    subject: owner.livemode ? subject : `[${t('owner_notice.test_tag')}] ${subject}`,
    intro: null,
    sections: [sectionOf(owner, intake, summary)],
    ...footerOf(owner),
  });
}

/** The daily digest: one section per intake with news, in the order their first notice came. */
export function digestEmail(
  owner: OwnerFacts,
  day: string,
  intakes: { intake: IntakeFacts; summary: NoticeSummary }[],
) {
  const t = translator(owner.language, 'email');
  const subject = t('owner_notice.digest_subject', { account: owner.accountName, date: day });
  return layoutEmail({
    language: supportedLanguage(owner.language),
    subject: owner.livemode ? subject : `[${t('owner_notice.test_tag')}] ${subject}`,
    intro: { title: t('owner_notice.digest_title', { date: day }), text: t('owner_notice.digest_intro') },
    sections: intakes.map(({ intake, summary }) => sectionOf(owner, intake, summary)),
    ...footerOf(owner),
  });
}
