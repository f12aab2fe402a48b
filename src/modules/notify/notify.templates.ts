import { supportedLanguage, translator } from '../../i18n/index.js';
import { emailLayout, escapeHtml, type EmailBlock, type EmailBranding } from './email-layout.js';

/** The emails a client receives. */
export const EMAIL_TEMPLATES = ['invitation', 'items_added', 'revision', 'reminder', 'completed'] as const;
export type EmailTemplate = (typeof EMAIL_TEMPLATES)[number];

export interface OutstandingLine {
  label: string;
  required: boolean;
  /** The revision note, for an item sent back. */
  note: string | null;
  /** Counted as still needed (optional items are listed, not counted, when something required is owed). */
  owed: boolean;
  /**
   * The client saved an answer and has not sent it: listed as "saved, not yet sent", never as
   * missing (the agency does not have it, but the client did the work).
   */
  saved?: boolean;
}

/** Everything a message says, gathered from the intake when it is sent (so it is current). */
export interface MessageContext {
  language: string;
  accountName: string;
  projectName: string;
  clientName: string | null;
  portalUrl: string;
  /** Reminders carry an opt-out link; other messages do not. */
  optOutUrl: string | null;
  dueDate: string | null;
  outstanding: OutstandingLine[];
  /** The sender's logo (an absolute address) and accent colour, where their plan has branding. */
  branding: Pick<EmailBranding, 'logoUrl' | 'accentColor'>;
  /** revision: the item sent back and why. */
  revision?: { itemLabel: string; note: string } | undefined;
}

export interface RenderedEmail {
  subject: string;
  text: string;
  html: string;
}

export { escapeHtml };

/** One formatter per supported language: building an Intl.DateTimeFormat costs more than using it. */
const dueDateFormats = new Map<string, Intl.DateTimeFormat>();

export function formatDueDate(date: string, language: string): string {
  const day = new Date(`${date}T00:00:00Z`);
  if (Number.isNaN(day.getTime())) return date;
  const locale = supportedLanguage(language);
  let format = dueDateFormats.get(locale);
  if (!format) {
    format = new Intl.DateTimeFormat(locale, { dateStyle: 'long', timeZone: 'UTC' });
    dueDateFormats.set(locale, format);
  }
  return format.format(day);
}

/**
 * One email in the client's language, HTML and plain text with the same content: what happened,
 * the note to act on (once), the due date, the button, then what is still needed.
 */
export function renderEmail(template: EmailTemplate, ctx: MessageContext): RenderedEmail {
  const t = translator(ctx.language, 'email');
  const vars = {
    account: ctx.accountName,
    project: ctx.projectName,
    item: ctx.revision?.itemLabel ?? '',
  };
  const subject = t(`${template}.subject`, vars);
  const intro = t(`${template}.intro`, vars);
  const blocks: EmailBlock[] = [{ kind: 'paragraph', text: intro }];
  if (template === 'revision' && ctx.revision) {
    blocks.push({
      kind: 'note',
      title: t('revision_note_title', { item: ctx.revision.itemLabel }),
      text: ctx.revision.note,
    });
  }
  if (template === 'completed') blocks.push({ kind: 'paragraph', text: t('completed.portal') });
  if (template !== 'completed' && ctx.dueDate) {
    blocks.push({
      kind: 'paragraph',
      text: t('due_date', { date: formatDueDate(ctx.dueDate, ctx.language) }),
    });
  }
  blocks.push({ kind: 'button', label: t('open_portal'), url: ctx.portalUrl, hint: t('portal_hint') });
  if (template !== 'completed') {
    // The revision note was said above: the list names that item without repeating it.
    const repeated = (line: OutstandingLine) =>
      template === 'revision' && ctx.revision?.itemLabel === line.label && ctx.revision.note === line.note;
    const missing = ctx.outstanding.filter((line) => !line.saved);
    const saved = ctx.outstanding.filter((line) => line.saved);
    if (missing.length > 0) {
      blocks.push({
        kind: 'list',
        heading: t('outstanding_heading'),
        items: missing.map((line) => ({
          text: line.required ? line.label : `${line.label} (${t('optional')})`,
          detail: repeated(line) ? null : line.note,
        })),
      });
    }
    if (saved.length > 0) {
      blocks.push({
        kind: 'list',
        heading: t('saved_heading'),
        items: saved.map((line) => ({ text: line.label })),
        after: t('saved_hint', vars),
      });
    }
  }
  const { html, text } = emailLayout({
    language: supportedLanguage(ctx.language),
    subject,
    preheader: intro,
    branding: { accountName: ctx.accountName, ...ctx.branding },
    greeting: ctx.clientName ? t('greeting', { name: ctx.clientName }) : t('greeting_anonymous'),
    blocks,
    signature: [t('thanks_sign'), ctx.accountName],
    footer: [t('footer_personal'), t('footer_sender', { account: ctx.accountName })],
    footerLink: ctx.optOutUrl
      ? { label: t('opt_out_link'), url: ctx.optOutUrl, text: t('opt_out', { url: ctx.optOutUrl }) }
      : null,
  });
  return { subject, text, html };
}

/** A reminder by SMS: one short line with the portal link. */
export function renderSmsReminder(ctx: MessageContext): string {
  // As in the email: what the client saved and did not send is not counted as missing.
  const saved = ctx.outstanding.filter((line) => line.saved).length;
  return translator(ctx.language, 'email')(saved > 0 ? 'sms.reminder_saved' : 'sms.reminder', {
    account: ctx.accountName,
    project: ctx.projectName,
    count: ctx.outstanding.filter((line) => line.owed && !line.saved).length,
    saved,
    url: ctx.portalUrl,
  });
}
