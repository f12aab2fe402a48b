import { dashboardAllows, type Role } from '../../domain/roles.js';
import type { TFunction } from 'i18next';
import { attr, flag, html, raw, type Html } from '../portal/page/html.js';
import type { DashboardAssets } from './assets.js';

/** What every signed-in page knows: who, which account and world, its language and CSRF token. */
export interface Chrome {
  t: TFunction;
  lang: string;
  csrf: string;
  assets: DashboardAssets;
  accountName: string;
  email: string;
  livemode: boolean;
  /** The current path, for the mode toggle to return to. */
  path: string;
  /**
   * The signed-in person's role: the navigation, buttons and forms show only what it allows
   * (`dashboardAllows`, the rule the server enforces with 403).
   */
  role?: Role;
  /** The account shown, and every account the person may switch to (the header's switcher). */
  accountId?: string;
  accounts?: readonly AccountChoice[];
}

/** One of the signed-in person's accounts, with their role in it. */
export interface AccountChoice {
  id: string;
  name: string;
  role: Role;
}

/** Whether the signed-in person's role may use this route: pages show nothing else. */
export function may(chrome: Pick<Chrome, 'role'>, method: 'GET' | 'POST', path: string): boolean {
  return !chrome.role || dashboardAllows(chrome.role, method, path);
}

/** A role's name in the page's language. */
export function roleLabel(chrome: Pick<Chrome, 't'>, role: Role): string {
  const { t } = chrome;
  return {
    owner: t('members.role_owner', 'Owner'),
    admin: t('members.role_admin', 'Admin'),
    member: t('members.role_member', 'Member'),
    viewer: t('members.role_viewer', 'Viewer'),
  }[role];
}

/**
 * The header's account switcher, for a person of several accounts: their accounts with their role in
 * each; choosing one moves the session there (no new sign-in). Works without script (a select and a
 * button).
 */
function accountSwitcher(chrome: Chrome): Html | null {
  const accounts = chrome.accounts ?? [];
  if (accounts.length < 2) return null;
  const { t } = chrome;
  return html`<form method="post" action="/dashboard/accounts/switch" class="account-switcher">
    ${csrfField(chrome.csrf)}
    <label for="account-switcher" class="visually-hidden">${t('accounts.switch_label', 'Account')}</label>
    <select id="account-switcher" name="account_id">
      ${accounts.map(
        (a) =>
          html`<option value="${a.id}" ${flag('selected', a.id === chrome.accountId)}>
            ${t('accounts.choice', '{{account}} ({{role}})', { account: a.name, role: roleLabel(chrome, a.role) })}
          </option>`,
      )}
    </select>
    <button type="submit">${t('accounts.switch', 'Switch')}</button>
  </form>`;
}

export const NAV = [
  ['intakes', 'Intakes'],
  ['templates', 'Templates'],
  ['webhooks', 'Webhooks'],
  ['keys', 'API keys'],
  ['inbox', 'Test inbox'],
  ['usage', 'Usage'],
  ['audit', 'Audit log'],
  ['members', 'Members'],
  ['settings', 'Settings'],
] as const;
export type Section = (typeof NAV)[number][0];

/** The hidden CSRF field every form carries. */
export function csrfField(csrf: string): Html {
  return html`<input type="hidden" name="_csrf" value="${csrf}" />`;
}

/**
 * A one-button POST form (actions: approve, revoke, archive…), optionally confirmed first. Nothing
 * when the person's role may not post to `action` (the server would answer 403).
 */
export function actionForm(
  chrome: Chrome,
  action: string,
  label: string,
  options: { danger?: boolean; secondary?: boolean; confirm?: string; fields?: Record<string, string> } = {},
): Html {
  if (!may(chrome, 'POST', action)) return nothing;
  const cls = options.danger ? 'danger' : options.secondary ? 'secondary' : null;
  return html`<form method="post" action="${action}" ${attr('data-confirm', options.confirm)}>
    ${csrfField(chrome.csrf)}
    ${Object.entries(options.fields ?? {}).map(([name, value]) => html`<input type="hidden" name="${name}" value="${value}" />`)}
    <button type="submit" ${attr('class', cls)}>${label}</button>
  </form>`;
}

/** One column of a data table; optional columns hide on narrow screens. */
export interface Column {
  label: string;
  optional?: boolean;
}

/**
 * A data table in its scrolling wrapper (focusable, so a keyboard can scroll it on a narrow screen):
 * a header row, then one row per item. With `cards`, a narrow screen shows each row as a card instead,
 * its cells one under another and the optional ones too, nothing to scroll sideways; a cell with a
 * `data-label` shows that label before it there (the header row is then for screen readers only).
 */
export function dataTable<T>(
  columns: readonly Column[],
  items: readonly T[],
  row: (item: T) => Html,
  options: { cards?: boolean } = {},
): Html {
  return html`<div class="table-wrap" tabindex="0">
    <table ${attr('class', options.cards ? 'cards' : null)}>
      <thead>
        <tr>
          ${columns.map((c) => html`<th scope="col" ${attr('class', c.optional ? 'optional' : null)}>${c.label}</th>`)}
        </tr>
      </thead>
      <tbody>
        ${items.map(row)}
      </tbody>
    </table>
  </div>`;
}

function documentShell(lang: string, title: string, assets: DashboardAssets, body: Html): string {
  return html`<!doctype html>
    <html lang="${lang}">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="referrer" content="no-referrer" />
        <title>${title}</title>
        <link rel="stylesheet" href="${assets.style.path}" />
        <script type="module" src="${assets.script.path}"></script>
      </head>
      <body>
        ${body}
      </body>
    </html>`.toString();
}

export interface PageParts {
  title: string;
  section: Section | null;
  body: Html;
  notice?: string | null | undefined;
  error?: string | null | undefined;
}

/** A signed-in page: header (account, live/test toggle, sign-out), navigation, then the content. */
export function renderPage(chrome: Chrome, parts: PageParts): string {
  const { t } = chrome;
  const modeLabel = chrome.livemode ? t('mode.live', 'Live mode') : t('mode.test', 'Test mode');
  const switchLabel = chrome.livemode
    ? t('mode.to_test', 'Switch to test data')
    : t('mode.to_live', 'Switch to live data');
  const body = html`<a class="skip" href="#content">${t('skip', 'Skip to content')}</a>
    <header class="top">
      ${accountSwitcher(chrome) ?? html`<span class="brand">${chrome.accountName}</span>`}
      <span
        class="badge ${chrome.livemode ? 'mode-live' : 'mode-test'}"
        data-mode="${chrome.livemode ? 'live' : 'test'}"
        >${modeLabel}</span
      >
      <form method="post" action="/dashboard/mode">
        ${csrfField(chrome.csrf)}
        <input type="hidden" name="mode" value="${chrome.livemode ? 'test' : 'live'}" />
        <input type="hidden" name="return_to" value="${chrome.path}" />
        <button type="submit">${switchLabel}</button>
      </form>
      <span class="muted-inverse">${chrome.email}</span>
      <form method="post" action="/dashboard/sign-out">
        ${csrfField(chrome.csrf)}<button type="submit">${t('sign_out', 'Sign out')}</button>
      </form>
    </header>
    ${chrome.livemode ? null : html`<div class="test-banner" role="status">${t('mode.banner', 'You are viewing test data. Nothing here reaches real clients.')}</div>`}
    <nav class="main" aria-label="${t('nav.label', 'Dashboard')}">
      <ul>
        ${NAV.filter(([id]) => may(chrome, 'GET', `/dashboard/${id}`)).map(
          ([id, label]) =>
            html`<li>
              <a href="/dashboard/${id}" ${attr('aria-current', parts.section === id ? 'page' : null)}
                >${t(`nav.${id}`, label)}</a
              >
            </li>`,
        )}
      </ul>
    </nav>
    <main id="content" tabindex="-1">
      ${parts.notice ? html`<div class="notice" role="status">${parts.notice}</div>` : null}
      ${parts.error ? html`<div class="error" role="alert">${parts.error}</div>` : null} ${parts.body}
    </main>`;
  const title = `${parts.title} · ${chrome.accountName}${chrome.livemode ? '' : ` (${modeLabel})`}`;
  return documentShell(chrome.lang, title, chrome.assets, body);
}

/** A page outside the signed-in area (sign-in, messages). */
export function renderBarePage(
  lang: string,
  assets: DashboardAssets,
  title: string,
  content: Html,
  error?: string | null,
): string {
  const body = html`<main id="content" class="narrow">
    ${error ? html`<div class="error" role="alert">${error}</div>` : null} ${content}
  </main>`;
  return documentShell(lang, title, assets, body);
}

/** A date-time as text: `2026-11-23 14:05 UTC`, for places that cannot hold markup. */
export function when(iso: string | null | undefined): string {
  if (!iso) return '—';
  return `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`;
}

/**
 * A moment for people: a <time> element that the dashboard's script rewrites in the viewer's own time
 * zone and language; without script it reads in UTC, and says so.
 */
export function moment(iso: string | null | undefined): Html {
  if (!iso) return html`—`;
  return html`<time datetime="${iso}">${when(iso)}</time>`;
}

/** A count or limit with the language's digit grouping: 10,000 / 10.000. */
export function count(chrome: Pick<Chrome, 'lang'>, n: number): string {
  return new Intl.NumberFormat(chrome.lang).format(n);
}

/**
 * A translated sentence with markup in its placeholders (a <time>, a link): the sentence is escaped,
 * then each placeholder is put in as the markup it is.
 */
export function tHtml(t: TFunction, key: string, fallback: string, parts: Record<string, Html>): Html {
  const tokens = Object.fromEntries(Object.keys(parts).map((name, i) => [name, `\u0000${i}\u0000`]));
  const sentence = html`${String(t(key, fallback, tokens))}`.value;
  return raw(
    Object.values(parts).reduce((out, part, i) => out.replace(`\u0000${i}\u0000`, part.value), sentence),
  );
}

export function badge(status: string, label?: string): Html {
  return html`<span class="badge ${status}">${label ?? status.replace(/_/g, ' ')}</span>`;
}

export const nothing = raw('');
