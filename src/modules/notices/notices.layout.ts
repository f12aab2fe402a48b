import { escapeHtml as e } from '../notify/notify.templates.js';

/**
 * What an owner email says, apart from how it looks: the layout below turns it into HTML and plain
 * text. Kept apart so the emails can move to the shared email layout without touching their content.
 */
export interface EmailContent {
  language: string;
  subject: string;
  /** A title and a line above the sections (the digest's), or null. */
  intro: { title: string; text: string } | null;
  /** Sections, each with a heading and what it says; the digest has one per intake. */
  sections: EmailSection[];
  /** Small print: why the person gets this, and where to change it. */
  footer: string[];
  settings: { label: string; url: string };
}

export interface EmailSection {
  heading: string;
  paragraphs: string[];
  list: { title: string; items: string[] } | null;
  button: { label: string; url: string; hint: string };
}

/** Plain text: the same content, links written out. */
function textOf(content: EmailContent): string {
  const lines: string[] = content.intro ? [content.intro.title, '', content.intro.text, ''] : [];
  for (const section of content.sections) {
    lines.push(section.heading, '');
    for (const p of section.paragraphs) lines.push(p, '');
    if (section.list) lines.push(section.list.title, ...section.list.items.map((i) => `- ${i}`), '');
    lines.push(`${section.button.label}: ${section.button.url}`, '');
  }
  lines.push('--', ...content.footer, `${content.settings.label}: ${content.settings.url}`);
  return lines.join('\n');
}

/**
 * A single-column table layout that mail clients render alike, 560 px at most and fluid below: long
 * addresses and links wrap anywhere rather than widen a phone's screen.
 */
function htmlOf(content: EmailContent): string {
  const wrap = 'overflow-wrap:anywhere;word-break:break-word';
  const ruled = (index: number) => index > 0 || content.intro !== null;
  const intro = content.intro
    ? `<tr><td><h1 style="margin:0 0 8px;font-size:20px;line-height:1.3;${wrap}">${e(content.intro.title)}</h1>
<p style="margin:0 0 8px;${wrap}">${e(content.intro.text)}</p></td></tr>\n`
    : '';
  const sections = content.sections
    .map(
      (
        s,
        index,
      ) => `<tr><td style="padding:${ruled(index) ? '16px' : '0'} 0 20px;${ruled(index) ? 'border-top:1px solid #e3e6ec;' : ''}">
<h2 style="margin:${ruled(index) ? '8px' : '0'} 0 12px;font-size:18px;line-height:1.3;${wrap}">${e(s.heading)}</h2>
${s.paragraphs.map((p) => `<p style="margin:0 0 12px;${wrap}">${e(p)}</p>`).join('\n')}
${s.list ? `<p style="margin:0 0 4px;${wrap}"><strong>${e(s.list.title)}</strong></p>\n<ul style="margin:0 0 12px;padding-left:20px">${s.list.items.map((i) => `<li style="${wrap}">${e(i)}</li>`).join('')}</ul>` : ''}
<table role="presentation" cellpadding="0" cellspacing="0" style="margin:16px 0 8px"><tr><td style="border-radius:6px;background:#2454d6"><a href="${e(s.button.url)}" style="display:inline-block;padding:12px 20px;color:#ffffff;text-decoration:none;font-weight:600">${e(s.button.label)}</a></td></tr></table>
<p style="margin:0;font-size:13px;color:#5b6475;${wrap}">${e(s.button.hint)}</p>
</td></tr>`,
    )
    .join('\n');
  return `<!doctype html>
<html lang="${e(content.language)}"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${e(content.subject)}</title></head>
<body style="margin:0;padding:0;background:#f5f6f8">
<table role="presentation" width="100%" cellpadding="0" cellspacing="0" style="background:#f5f6f8"><tr><td style="padding:16px 8px">
<table role="presentation" width="100%" cellpadding="0" cellspacing="0" style="max-width:560px;margin:0 auto;background:#ffffff;border-radius:8px;font-family:-apple-system,Segoe UI,Roboto,Helvetica,Arial,sans-serif;color:#1d2330;line-height:1.5;font-size:15px">
<tr><td style="padding:24px 20px">
<table role="presentation" width="100%" cellpadding="0" cellspacing="0">
${intro}${sections}
</table>
</td></tr></table>
<p style="max-width:560px;margin:16px auto 0;padding:0 12px;font-family:-apple-system,Segoe UI,Roboto,Helvetica,Arial,sans-serif;font-size:12px;line-height:1.5;color:#6b7385;${wrap}">${content.footer.map(e).join('<br>')}<br><a href="${e(content.settings.url)}" style="color:#6b7385">${e(content.settings.label)}</a></p>
</td></tr></table>
</body></html>
`;
}

export function layoutEmail(content: EmailContent): { subject: string; text: string; html: string } {
  return { subject: content.subject, text: textOf(content), html: htmlOf(content) };
}
