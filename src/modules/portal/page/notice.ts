import type { TFunction } from 'i18next';
import { html, raw } from './html.js';
import { ICONS } from './icons.js';
import type { Branding } from './model.js';
import { shell, topBar, type PageAssets } from './shell.js';

/** 404 (unknown or deleted) and closed-without-content pages: a message and nothing else. */
export function renderMessagePage(
  m: { t: TFunction; language: string; branding: Branding | null },
  assets: PageAssets,
  nonce: string,
  kind: 'not_found' | 'purged',
): string {
  const branding = m.branding ?? { accountName: m.t('service'), logoUrl: null, accentColor: null };
  return renderNoticePage({ ...m, branding }, assets, nonce, {
    title: m.t(`${kind}.title`),
    paragraphs: [m.t(`${kind}.text`, { account: branding.accountName })],
  });
}

/** A page of the client's that says one thing (and may ask one thing): opt-out, not found, closed. */
export interface NoticeContent {
  title: string;
  paragraphs: string[];
  /** A form with one primary button (POSTs to `action`, same origin). */
  form?: { action: string; button: string; fields?: Record<string, string> };
  /** A link under the message (e.g. back to the client's page). */
  link?: { href: string; label: string };
  icon?: keyof typeof ICONS;
  /** The language switcher links to ?lang= of this page: only for pages that read it. */
  switcher?: boolean;
}

export function renderNoticePage(
  m: { t: TFunction; language: string; branding: Branding },
  assets: PageAssets,
  nonce: string,
  content: NoticeContent,
): string {
  const form = content.form
    ? html`<form method="post" action="${content.form.action}" class="notice-form">
        ${Object.entries(content.form.fields ?? {}).map(
          ([name, value]) => html`<input type="hidden" name="${name}" value="${value}" />`,
        )}
        <button type="submit" class="primary">${content.form.button}</button>
      </form>`
    : '';
  const link = content.link
    ? html`<p class="notice-link"><a href="${content.link.href}">${content.link.label}</a></p>`
    : '';
  const body = html`${topBar(m, m.branding, content.switcher ?? true)}
    <main id="main" class="message-page">
      <div class="banner banner-closed">
        ${raw(ICONS[content.icon ?? 'lock'])}
        <div>
          <h1 class="banner-title">${content.title}</h1>
          ${content.paragraphs.map((p) => html`<p>${p}</p>`)}${form}
        </div>
      </div>
      ${link}
    </main>`;
  return shell(m, assets, nonce, content.title, body);
}
