import type { TFunction } from 'i18next';
import { html } from '../../portal/page/html.js';
import type { DashboardAssets } from '../assets.js';
import { csrfField, renderBarePage } from '../layout.js';
import { SIGN_IN_LINK_TTL_MS } from '../../sessions/sign-in.service.js';

interface BareChrome {
  t: TFunction;
  lang: string;
  csrf: string;
  assets: DashboardAssets;
}

export function signInPage(c: BareChrome, returnTo: string | null, error?: string): string {
  const { t } = c;
  return renderBarePage(
    c.lang,
    c.assets,
    t('sign_in.title', 'Sign in'),
    html`<div class="card">
      <h1>${t('sign_in.title', 'Sign in')}</h1>
      <p>
        ${t('sign_in.intro', 'Enter the email address of your account. We will email you a link that signs you in.')}
      </p>
      <form method="post" action="/dashboard/sign-in">
        ${csrfField(c.csrf)}
        ${returnTo ? html`<input type="hidden" name="return_to" value="${returnTo}" />` : null}
        <label for="email">${t('sign_in.email', 'Email address')}</label>
        <input type="email" id="email" name="email" autocomplete="email" required autofocus />
        <div class="actions">
          <button type="submit">${t('sign_in.send', 'Email me a sign-in link')}</button>
        </div>
      </form>
    </div>`,
    error,
  );
}

export function linkSentPage(c: BareChrome, email: string): string {
  const { t } = c;
  const minutes = SIGN_IN_LINK_TTL_MS / 60_000;
  return renderBarePage(
    c.lang,
    c.assets,
    t('sign_in.sent_title', 'Check your email'),
    html`<div class="card">
      <h1>${t('sign_in.sent_title', 'Check your email')}</h1>
      <p role="status">
        ${t('sign_in.sent', 'If {{email}} belongs to an account, a sign-in link is on its way. It works once, for {{minutes}} minutes.', { email, minutes })}
      </p>
      <p><a href="/dashboard/sign-in">${t('sign_in.again', 'Use another address')}</a></p>
    </div>`,
  );
}

/**
 * The link's landing page asks for one click: the link itself changes nothing, so mail scanners that
 * fetch links cannot use it up.
 */
export function confirmPage(c: BareChrome, token: string): string {
  const { t } = c;
  return renderBarePage(
    c.lang,
    c.assets,
    t('sign_in.confirm_title', 'Finish signing in'),
    html`<div class="card">
      <h1>${t('sign_in.confirm_title', 'Finish signing in')}</h1>
      <form method="post" action="/dashboard/sign-in/confirm">
        ${csrfField(c.csrf)}
        <input type="hidden" name="token" value="${token}" />
        <button type="submit" autofocus>${t('sign_in.confirm', 'Sign in to the dashboard')}</button>
      </form>
    </div>`,
  );
}

export function linkInvalidPage(c: BareChrome): string {
  const { t } = c;
  return renderBarePage(
    c.lang,
    c.assets,
    t('sign_in.invalid_title', 'This link no longer works'),
    html`<div class="card">
      <h1>${t('sign_in.invalid_title', 'This link no longer works')}</h1>
      <p>
        ${t('sign_in.invalid', 'Sign-in links work once and expire after a few minutes. Ask for a new one.')}
      </p>
      <p><a class="button" href="/dashboard/sign-in">${t('sign_in.new_link', 'Get a new link')}</a></p>
    </div>`,
  );
}

export function errorPage(c: Omit<BareChrome, 'csrf'>, status: number, message: string): string {
  const { t } = c;
  return renderBarePage(
    c.lang,
    c.assets,
    t('error.title', 'Something went wrong'),
    html`<div class="card">
      <h1>
        ${
          status === 404
            ? t('error.not_found', 'Not found')
            : status === 403
              ? t('error.forbidden', 'Not allowed')
              : t('error.title', 'Something went wrong')
        }
      </h1>
      <p>${message}</p>
      <p><a href="/dashboard">${t('error.back', 'Back to the dashboard')}</a></p>
    </div>`,
  );
}
