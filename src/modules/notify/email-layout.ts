import type mjml2htmlFunction from 'mjml';
import type { EmailBranding as AccountEmailBranding } from '../accounts/branding.js';
import { onFirstUse } from '../../lib/on-first-use.js';
import { readableOnWhite } from '../portal/page/colour.js';

/**
 * The one layout of every email we send: HTML that mail clients render (compiled by MJML: nested tables,
 * inline styles, no script; a 560 px column that shrinks to the phone) and the plain-text part made
 * from the same blocks, so both say the same thing. The call to action comes first, long links wrap,
 * and the sender's logo and accent colour are used when the account has them.
 */

export interface EmailBranding extends AccountEmailBranding {
  /** Shown at the top when there is no logo, and as the logo's alt text. */
  accountName: string;
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

/**
 * Puts one piece of an email's content (already escaped HTML) aside and returns the placeholder that
 * stands for it in the MJML document. The document is then the email's shape alone, so its compiled
 * HTML is kept and reused: emails of one shape (a kind of email, in one language and colour) are
 * compiled once, and each is the kept HTML with its own content put in.
 */
type Put = (html: string) => string;

/** A text block: MJML's text cell, with a sender's words wrapped so they never widen a phone's screen. */
const text = (put: Put, inner: string, attributes = '') =>
  `<mj-text${attributes}><div style="${WRAP}">${put(inner)}</div></mj-text>`;

/** Line breaks of a sender's text kept, everything escaped. */
const multiline = (value: string) => e(value).replace(/\n/g, '<br>');

function blockMjml(put: Put, block: EmailBlock, accent: string): string {
  switch (block.kind) {
    case 'paragraph':
      return text(put, multiline(block.text));
    case 'note':
      return text(
        put,
        `<div style="border-left:4px solid ${accent};background:#f4f5f7;border-radius:4px;padding:12px 16px">
<p style="margin:0 0 4px;font-size:14px;line-height:20px;font-weight:600">${e(block.title)}</p>
<p style="margin:0">${multiline(block.text)}</p></div>`,
        ' padding="0 0 20px"',
      );
    case 'button':
      // MJML's button is a table cell with the colour behind the link: it shows in Outlook too.
      return `<mj-button href="${put(e(block.url))}" background-color="${accent}" color="#ffffff" font-size="16px" font-weight="600" line-height="20px" border-radius="8px" inner-padding="14px 24px" align="left" padding="8px 0 12px">${put(e(block.label))}</mj-button>
${text(
  put,
  `${e(block.hint)}<br><a href="${e(block.url)}" target="_blank" style="color:${accent};word-break:break-all;overflow-wrap:anywhere">${e(block.url)}</a>`,
  ` font-size="13px" line-height="20px" color="${MUTED}" padding="0 0 24px"`,
)}`;
    case 'list':
      return text(
        put,
        `<p style="margin:0 0 8px;font-weight:600">${e(block.heading)}</p>
<ul style="margin:0;padding:0 0 0 22px">${block.items
          .map(
            (i) =>
              `<li style="margin:0 0 6px">${e(i.text)}${i.detail ? `<br><span style="color:${MUTED}">${multiline(i.detail)}</span>` : ''}</li>`,
          )
          .join('')}</ul>${block.after ? `<p style="margin:16px 0 0">${e(block.after)}</p>` : ''}`,
      );
  }
}

function brandMjml(put: Put, branding: EmailBranding): string {
  const inner = branding.logoUrl
    ? `<img src="${e(branding.logoUrl)}" alt="${e(branding.accountName)}" height="40" style="display:block;height:40px;width:auto;max-width:200px;border:0;outline:none;text-decoration:none;font-size:18px;font-weight:600;color:${INK}">`
    : `<span style="font-size:18px;line-height:24px;font-weight:700">${e(branding.accountName)}</span>`;
  return `<mj-section padding="0 4px 16px"><mj-column>${text(put, inner, ' padding="0"')}</mj-column></mj-section>`;
}

/** Compiled shapes, newest last; a few hundred at most (kinds of email × languages × accounts' colours). */
const shapes = new Map<string, string>();
const MAX_SHAPES = 500;

/**
 * MJML, loaded at the first email this process renders: about 14 MB of resident memory (its
 * components, juice, html-minifier, uglify-js) that an API process, which sends no email itself,
 * never pays.
 */
const mjml2html = onFirstUse<typeof mjml2htmlFunction>('mjml');

function compiledShape(document: string): string {
  const kept = shapes.get(document);
  if (kept !== undefined) return kept;
  const { html } = mjml2html()(document, { validationLevel: 'strict', keepComments: false });
  if (shapes.size >= MAX_SHAPES) shapes.delete(shapes.keys().next().value ?? '');
  shapes.set(document, html);
  return html;
}

/**
 * One email's HTML and plain text from its blocks. The HTML is written in MJML and compiled by it:
 * MJML's tables, Outlook conditionals and phone breakpoints are maintained and tested by its project,
 * so ours only say what each email contains. Strict validation: markup MJML does not know fails here.
 */
export function emailLayout(input: EmailLayoutInput): { html: string; text: string } {
  const accent = readableOnWhite((input.branding.accentColor ?? DEFAULT_ACCENT).toLowerCase());
  const footer = [
    ...input.footer.map(e),
    ...(input.footerLink
      ? [
          `<a href="${e(input.footerLink.url)}" target="_blank" style="color:${MUTED}">${e(input.footerLink.label)}</a>`,
        ]
      : []),
  ].join('<br>');
  const slots: string[] = [];
  const put: Put = (html) => `@@slot-${slots.push(html) - 1}@@`;
  const document = `<mjml lang="${e(input.language)}">
<mj-head>
<mj-title>${put(e(input.subject))}</mj-title>
${input.preheader ? `<mj-preview>${put(e(input.preheader))}</mj-preview>` : ''}
<mj-breakpoint width="480px" />
<mj-attributes>
<mj-all font-family="${FONT}" />
<mj-text font-size="16px" line-height="24px" color="${INK}" padding="0 0 16px" />
</mj-attributes>
</mj-head>
<mj-body width="560px" background-color="#f4f5f7">
<mj-wrapper padding="24px 12px">
${brandMjml(put, input.branding)}
<mj-section background-color="#ffffff" border-top="4px solid ${accent}" border-radius="12px" padding="28px 28px 12px">
<mj-column>
${text(put, e(input.greeting))}
${input.blocks.map((b) => blockMjml(put, b, accent)).join('\n')}
${text(put, input.signature.map(e).join('<br>'))}
</mj-column>
</mj-section>
<mj-section padding="16px 4px 0"><mj-column>${text(put, footer, ` font-size="12px" line-height="18px" color="${MUTED}" padding="0"`)}</mj-column></mj-section>
</mj-wrapper>
</mj-body>
</mjml>`;
  const html = compiledShape(document).replace(/@@slot-(\d+)@@/g, (_, n: string) => slots[Number(n)] ?? '');
  return { html, text: textPart(input) };
}
