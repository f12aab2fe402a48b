import { readableOnWhite } from '../portal/page/colour.js';

/**
 * The one layout of every email we send: HTML that mail clients render (nested tables, inline styles,
 * no script, no external CSS; a 560 px column that shrinks to the phone) and the plain-text part made
 * from the same blocks, so both say the same thing. The call to action comes first, long links wrap,
 * and the sender's logo and accent colour are used when the account has them.
 */

export interface EmailBranding {
  /** Shown at the top when there is no logo, and as the logo's alt text. */
  accountName: string;
  /** An absolute http(s) address of the logo image (mail clients do not show data: URLs). */
  logoUrl: string | null;
  /** #rrggbb: the button and the band above the message; darkened if white text would not read on it. */
  accentColor: string | null;
}

export type EmailBlock =
  | { kind: 'paragraph'; text: string }
  /** Set apart with the accent colour: a note from the sender (e.g. what to change). */
  | { kind: 'note'; title: string; text: string }
  /** The call to action: a button, and the address written out below it for copying. */
  | { kind: 'button'; label: string; url: string; hint: string }
  | { kind: 'list'; heading: string; items: { text: string; detail?: string | null }[]; after?: string };

export interface EmailLayoutInput {
  /** The html lang attribute (a supported language code). */
  language: string;
  subject: string;
  /** The line mail clients show after the subject in the inbox; not shown in the message itself. */
  preheader?: string;
  branding: EmailBranding;
  greeting: string;
  blocks: EmailBlock[];
  /** Closing lines, e.g. "Thank you," and the sender's name. */
  signature: string[];
  /** Small print under the message. */
  footer: string[];
  /** A link in the small print (opt-out): its label in HTML, and the whole line in the text part. */
  footerLink?: { label: string; url: string; text: string } | null;
}

export function escapeHtml(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

const e = escapeHtml;
const DEFAULT_ACCENT = '#2450c8';
const INK = '#1b1f24';
const MUTED = '#545c69';
const FONT = "-apple-system,BlinkMacSystemFont,'Segoe UI',Roboto,Helvetica,Arial,sans-serif";
/** Long words and addresses break instead of widening the message past a phone's screen. */
const WRAP = 'overflow-wrap:anywhere;word-break:break-word';

/** The plain-text part: the same blocks, in the same order. */
function textPart(input: EmailLayoutInput): string {
  const lines: string[] = [input.greeting, ''];
  for (const block of input.blocks) {
    switch (block.kind) {
      case 'paragraph':
        lines.push(block.text, '');
        break;
      case 'note':
        lines.push(block.title, ...block.text.split('\n').map((l) => `> ${l}`), '');
        break;
      case 'button':
        lines.push(`${block.label}:`, block.url, '');
        break;
      case 'list':
        lines.push(
          block.heading,
          ...block.items.map((i) => (i.detail ? `- ${i.text}: ${i.detail}` : `- ${i.text}`)),
          ...(block.after ? [block.after] : []),
          '',
        );
        break;
    }
  }
  lines.push(...input.signature, '', '--', ...input.footer);
  if (input.footerLink) lines.push(input.footerLink.text);
  return lines.join('\n');
}

const paragraph = (inner: string, style = '') =>
  `<p style="margin:0 0 16px;font-size:16px;line-height:24px;color:${INK};${WRAP};${style}">${inner}</p>`;

/** Line breaks of a sender's text kept, everything escaped. */
const multiline = (text: string) => e(text).replace(/\n/g, '<br>');

function blockHtml(block: EmailBlock, accent: string): string {
  switch (block.kind) {
    case 'paragraph':
      return paragraph(multiline(block.text));
    case 'note':
      return `<table role="presentation" width="100%" cellpadding="0" cellspacing="0" border="0" style="margin:0 0 20px;border-collapse:separate">
<tr><td style="border-left:4px solid ${accent};background:#f4f5f7;border-radius:4px;padding:12px 16px;font-family:${FONT};${WRAP}">
<p style="margin:0 0 4px;font-size:14px;line-height:20px;font-weight:600;color:${INK}">${e(block.title)}</p>
<p style="margin:0;font-size:16px;line-height:24px;color:${INK}">${multiline(block.text)}</p>
</td></tr></table>`;
    case 'button':
      // A table cell with the colour behind the link: the button shows in Outlook too.
      return `<table role="presentation" cellpadding="0" cellspacing="0" border="0" style="margin:8px 0 12px">
<tr><td align="center" bgcolor="${accent}" style="border-radius:8px;background:${accent}">
<a href="${e(block.url)}" target="_blank" style="display:inline-block;padding:14px 24px;font-family:${FONT};font-size:16px;line-height:20px;font-weight:600;color:#ffffff;text-decoration:none;border-radius:8px">${e(block.label)}</a>
</td></tr></table>
<p style="margin:0 0 24px;font-size:13px;line-height:20px;color:${MUTED};word-break:break-all;overflow-wrap:anywhere">${e(block.hint)}<br><a href="${e(block.url)}" target="_blank" style="color:${accent};word-break:break-all;overflow-wrap:anywhere">${e(block.url)}</a></p>`;
    case 'list':
      return `<p style="margin:0 0 8px;font-size:16px;line-height:24px;font-weight:600;color:${INK}">${e(block.heading)}</p>
<ul style="margin:0 0 16px;padding:0 0 0 22px;font-size:16px;line-height:24px;color:${INK};${WRAP}">${block.items
        .map(
          (i) =>
            `<li style="margin:0 0 6px">${e(i.text)}${i.detail ? `<br><span style="color:${MUTED}">${multiline(i.detail)}</span>` : ''}</li>`,
        )
        .join('')}</ul>${block.after ? paragraph(e(block.after)) : ''}`;
  }
}

function brandRow(branding: EmailBranding): string {
  const inner = branding.logoUrl
    ? `<img src="${e(branding.logoUrl)}" alt="${e(branding.accountName)}" height="40" style="display:block;height:40px;width:auto;max-width:200px;border:0;outline:none;text-decoration:none;font-family:${FONT};font-size:18px;font-weight:600;color:${INK}">`
    : `<span style="font-family:${FONT};font-size:18px;line-height:24px;font-weight:700;color:${INK};${WRAP}">${e(branding.accountName)}</span>`;
  return `<tr><td style="padding:0 4px 16px">${inner}</td></tr>`;
}

/**
 * One email's HTML and plain text from its blocks. Outlook on Windows ignores max-width, so a fixed
 * 560 px table wraps the column there (conditional comments only it reads).
 */
export function emailLayout(input: EmailLayoutInput): { html: string; text: string } {
  const accent = readableOnWhite((input.branding.accentColor ?? DEFAULT_ACCENT).toLowerCase());
  const preheader = input.preheader
    ? `<div style="display:none;max-height:0;max-width:0;overflow:hidden;opacity:0;mso-hide:all">${e(input.preheader)}</div>`
    : '';
  const footer = [
    ...input.footer.map(e),
    ...(input.footerLink
      ? [
          `<a href="${e(input.footerLink.url)}" target="_blank" style="color:${MUTED}">${e(input.footerLink.label)}</a>`,
        ]
      : []),
  ].join('<br>');
  const html = `<!doctype html>
<html lang="${e(input.language)}" xmlns="http://www.w3.org/1999/xhtml">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="x-apple-disable-message-reformatting">
<meta name="color-scheme" content="light">
<meta name="supported-color-schemes" content="light">
<title>${e(input.subject)}</title>
<style>
@media (max-width: 480px) { .email-body { padding: 24px 16px !important; } .email-outer { padding: 12px 8px !important; } }
</style>
</head>
<body style="margin:0;padding:0;background:#f4f5f7;-webkit-text-size-adjust:100%;text-size-adjust:100%">
${preheader}
<table role="presentation" width="100%" cellpadding="0" cellspacing="0" border="0" style="background:#f4f5f7">
<tr><td align="center" class="email-outer" style="padding:24px 12px">
<!--[if mso]><table role="presentation" width="560" align="center" cellpadding="0" cellspacing="0" border="0"><tr><td><![endif]-->
<table role="presentation" width="100%" cellpadding="0" cellspacing="0" border="0" style="max-width:560px;width:100%;table-layout:fixed">
${brandRow(input.branding)}
<tr><td class="email-body" style="background:#ffffff;border-top:4px solid ${accent};border-radius:12px;padding:28px 28px 12px;font-family:${FONT};${WRAP}">
${paragraph(e(input.greeting))}
${input.blocks.map((b) => blockHtml(b, accent)).join('\n')}
${paragraph(input.signature.map(e).join('<br>'))}
</td></tr>
<tr><td style="padding:16px 4px 0;font-family:${FONT};font-size:12px;line-height:18px;color:${MUTED};${WRAP}">${footer}</td></tr>
</table>
<!--[if mso]></td></tr></table><![endif]-->
</td></tr>
</table>
</body>
</html>
`;
  return { html, text: textPart(input) };
}
