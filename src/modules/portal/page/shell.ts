import type { TFunction } from 'i18next';
import { SUPPORTED_LANGUAGES } from '../../../i18n/index.js';
import { accentVariables } from './colour.js';
import { attr, html, raw, type Html } from './html.js';
import { ICONS } from './icons.js';
import { languageName } from './language.js';
import type { Branding } from './model.js';

/** What every portal page has around its content: the head, the brand bar and the language switcher. */

export interface PageAssets {
  scriptPath: string;
  stylePath: string;
}

/**
 * The page's language switcher: plain links (no script needed), each in its own language and marked
 * with hreflang; the choice is kept for the visit by the page (a session cookie).
 */
function languageSwitcher(m: { t: TFunction; language: string }): Html {
  const current = languageName(m.language);
  return html`<details class="languages">
    <summary>
      ${raw(ICONS.globe)}<span class="visually-hidden">${m.t('language.label')}: </span
      ><span lang="${m.language}">${current}</span>
    </summary>
    <ul>
      ${SUPPORTED_LANGUAGES.map(
        (code) =>
          html`<li>
            <a
              href="?lang=${code}"
              hreflang="${code}"
              lang="${code}"
              ${attr('aria-current', code === m.language ? 'true' : undefined)}
              >${languageName(code)}</a
            >
          </li>`,
      )}
    </ul>
  </details>`;
}

export function topBar(m: { t: TFunction; language: string }, b: Branding, switcher = true): Html {
  const logo = b.logoUrl ? html`<img class="logo" src="${b.logoUrl}" alt="" height="32" />` : '';
  return html`<header class="top">
    <div class="brand">
      ${logo}<span class="brand-name">${b.accountName}</span>${switcher ? languageSwitcher(m) : ''}
    </div>
  </header>`;
}

export function shell(
  m: { t: TFunction; language: string; branding: Branding },
  assets: PageAssets,
  nonce: string,
  title: string,
  body: Html,
  extraHead: Html | string = '',
): string {
  const accent = m.branding.accentColor;
  const style = accent
    ? html`<style nonce="${nonce}">
        :root{${accentVariables(accent)}}
      </style>`
    : '';
  return `<!doctype html>${
    html`<html lang="${m.language}">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="referrer" content="no-referrer" />
        <meta name="robots" content="noindex, nofollow" />
        <link rel="icon" href="data:," />
        <title>${title}</title>
        <link rel="stylesheet" href="${assets.stylePath}" />
        ${style}${extraHead}
      </head>
      <body>
        ${body}
      </body>
    </html>`.value
  }`;
}
