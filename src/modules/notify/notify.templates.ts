import { supportedLanguage, translator } from '../../i18n/index.js';

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
  /** revision: the item sent back and why. */
  revision?: { itemLabel: string; note: string } | undefined;
}

export interface RenderedEmail {
  subject: string;
  text: string;
  html: string;
}

export function escapeHtml(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

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

/** One email in the client's language: subject, plain text and HTML with the same content. */
export function renderEmail(template: EmailTemplate, ctx: MessageContext): RenderedEmail {
  const t = translator(ctx.language, 'email');
  const vars = {
    account: ctx.accountName,
    project: ctx.projectName,
    item: ctx.revision?.itemLabel ?? '',
  };
  const subject = t(`${template}.subject`, vars);
  const greeting = ctx.clientName ? t('greeting', { name: ctx.clientName }) : t('greeting_anonymous');
  const paragraphs = [t(`${template}.intro`, vars)];
  if (template === 'revision' && ctx.revision)
    paragraphs.push(t('revision_note', { note: ctx.revision.note }));
  if (template === 'completed') paragraphs.push(t('completed.portal'));
  const missing = ctx.outstanding.filter((line) => !line.saved);
  const saved = ctx.outstanding.filter((line) => line.saved);
  const owed = missing.filter((line) => line.owed).length;
  if (template === 'reminder') paragraphs.push(t('reminder.count', { count: owed }));
  const listed = template !== 'completed';
  const showItems = listed && missing.length > 0;
  const showSaved = listed && saved.length > 0;
  const lines = missing.map((line) => {
    const label = line.required ? line.label : `${line.label} (${t('optional')})`;
    return line.note ? `${label}: ${line.note}` : label;
  });
  const savedLines = saved.map((line) => line.label);
  const due =
    template !== 'completed' && ctx.dueDate
      ? t('due_date', { date: formatDueDate(ctx.dueDate, ctx.language) })
      : null;
  const footer = [t('footer_personal'), t('footer_sender', { account: ctx.accountName })];

  const text = [
    greeting,
    '',
    ...paragraphs.flatMap((p) => [p, '']),
    ...(showItems ? [t('outstanding_heading'), ...lines.map((l) => `- ${l}`), ''] : []),
    ...(showSaved ? [t('saved_heading'), ...savedLines.map((l) => `- ${l}`), t('saved_hint', vars), ''] : []),
    ...(due ? [due, ''] : []),
    `${t('open_portal')}: ${ctx.portalUrl}`,
    '',
    t('thanks_sign'),
    ctx.accountName,
    '',
    '--',
    ...footer,
    ...(ctx.optOutUrl ? [t('opt_out', { url: ctx.optOutUrl })] : []),
  ].join('\n');

  const e = escapeHtml;
  const html = `<!doctype html>
<html lang="${e(supportedLanguage(ctx.language))}"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width"><title>${e(subject)}</title></head>
<body style="margin:0;padding:24px;background:#f5f6f8;font-family:-apple-system,Segoe UI,Roboto,Helvetica,Arial,sans-serif;color:#1d2330;line-height:1.5">
<div style="max-width:560px;margin:0 auto;background:#fff;border-radius:8px;padding:28px">
<p>${e(greeting)}</p>
${paragraphs.map((p) => `<p>${e(p)}</p>`).join('\n')}
${showItems ? `<p style="margin-bottom:4px"><strong>${e(t('outstanding_heading'))}</strong></p>\n<ul>${lines.map((l) => `<li>${e(l)}</li>`).join('')}</ul>` : ''}
${showSaved ? `<p style="margin-bottom:4px"><strong>${e(t('saved_heading'))}</strong></p>\n<ul>${savedLines.map((l) => `<li>${e(l)}</li>`).join('')}</ul>\n<p>${e(t('saved_hint', vars))}</p>` : ''}
${due ? `<p>${e(due)}</p>` : ''}
<p style="margin:28px 0"><a href="${e(ctx.portalUrl)}" style="background:#2454d6;color:#fff;padding:12px 20px;border-radius:6px;text-decoration:none;display:inline-block">${e(t('open_portal'))}</a></p>
<p style="font-size:13px;color:#5b6475">${e(t('portal_hint', { url: ctx.portalUrl }))}</p>
<p>${e(t('thanks_sign'))}<br>${e(ctx.accountName)}</p>
</div>
<p style="max-width:560px;margin:16px auto 0;font-size:12px;color:#7a8294">${footer.map(e).join('<br>')}${ctx.optOutUrl ? `<br><a href="${e(ctx.optOutUrl)}" style="color:#7a8294">${e(t('opt_out_link'))}</a>` : ''}</p>
</body></html>
`;
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
