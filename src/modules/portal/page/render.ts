import type { TFunction } from 'i18next';
import { renderCard } from './card.js';
import { renderSections } from './thread.js';
import { formatBytes, formatDate, formatNumber } from './format.js';
import { flag, html, jsonForScript, raw, type Html } from './html.js';
import { ICONS } from './icons.js';
import { shell, topBar, type PageAssets } from './shell.js';
import { isUnsent, portalPath, type PageModel } from './model.js';

/** The portal page, rendered on the server in the client's language; the script only enhances it. */

/** Messages the page script needs (uploads, autosave, client-side checks), in the page's language. */
const CLIENT_MESSAGES = [
  'js.saving',
  'js.saved',
  'js.saved_local',
  'js.offline',
  'js.restored',
  'js.uploading',
  'js.uploaded',
  'js.upload_failed',
  'js.retry',
  'js.cancel',
  'js.paused',
  'js.resume_hint',
  'js.discard',
  'js.too_many',
  'js.one_at_a_time',
  'js.wrong_type',
  'js.too_large',
  'js.too_narrow',
  'js.too_short',
  'js.not_transparent',
  'js.chars',
  'js.chars_over',
  'js.add_colour',
  'js.removing',
  'js.submitting',
  'js.sending',
  'js.rate_limited',
  'js.network',
  'js.required',
  'js.invalid',
  'js.field_min',
  'js.field_max',
  'js.field_minlength',
  'js.field_maxlength',
  'js.field_type_email',
  'js.field_type_url',
  'js.field_type_number',
  'js.field_pattern',
  'js.example',
  'js.drop_here',
  'secret.show',
  'secret.hide',
] as const;

export function clientMessages(t: TFunction): Record<string, string> {
  return Object.fromEntries(CLIENT_MESSAGES.map((key) => [key, t(key)]));
}

export function renderSummary(m: PageModel): Html {
  const { t, view } = m;
  const { submitted, total } = view.progress;
  const items = view.items;
  const revisions = items.filter((i) => i.status === 'needs_revision');
  const requiredLeft = items.filter((i) => i.required && i.status !== 'submitted' && i.status !== 'approved');
  // Nothing is "done" while something the client saved has not reached the agency.
  const unsent = items.filter(isUnsent).length;
  const allDone =
    unsent === 0 &&
    (items.some((i) => i.required) ? requiredLeft.length === 0 : submitted === total && total > 0);
  const allApproved = items.length > 0 && items.every((i) => i.status === 'approved' || !i.required);
  // "All done" beside "1 of 2 done" reads as a contradiction: say that the rest is optional.
  const progressText = t(allDone && submitted < total ? 'progress_optional_left' : 'progress', {
    done: formatNumber(m.language, submitted),
    total: formatNumber(m.language, total),
  });
  let banner: Html | string = '';
  const sent = m.sent ? sentBanner(m, m.sent) : '';
  if (revisions.length > 0) {
    banner = html`<div class="banner banner-warn">
      ${raw(ICONS.alert)}
      <div>
        <p class="banner-title">
          ${t('banner.revisions', {
            count: revisions.length,
          })}
        </p>
        <ul class="jump">
          ${revisions.map((r) => html`<li><a href="#item-${r.key}">${r.label}</a></li>`)}
        </ul>
      </div>
    </div>`;
  } else if (allDone) {
    banner = html`<div class="banner banner-done" id="all-done">
      ${raw(ICONS.party)}
      <div>
        <p class="banner-title">${t(allApproved ? 'banner.all_approved' : 'banner.all_done')}</p>
        <p>
          ${t(allApproved ? 'banner.all_approved_text' : 'banner.all_done_text', { account: m.branding.accountName })}
        </p>
      </div>
    </div>`;
  } else if (requiredLeft.length > 0) {
    // Points to what still needs an answer; the one primary action on the page is the send.
    const next = requiredLeft.find((i) => !isUnsent(i));
    banner = next
      ? html`<p class="next">
          <a href="#item-${next.key}" class="button secondary">${t('banner.next', { label: next.label })}</a>
        </p>`
      : '';
  }
  return html`<section class="summary" id="summary" aria-label="${t('progress_label')}">
    <div class="progress-row">
      <p class="progress-text" id="progress-text">${progressText}</p>
      <progress max="${Math.max(total, 1)}" value="${submitted}" aria-labelledby="progress-text">
        ${progressText}
      </progress>
    </div>
    ${sent}${banner}
  </section>`;
}

/** After the page's one send: what went, and whether anything was held back for a fix. */
function sentBanner(m: PageModel, sent: { submitted: number; invalid: number }): Html {
  const { t } = m;
  const title = sent.submitted > 0 ? t('send.done', { count: sent.submitted }) : t('send.none');
  const detail =
    sent.invalid > 0
      ? t('send.invalid', { count: sent.invalid })
      : t('send.thanks', { account: m.branding.accountName });
  return html`<div
    class="banner ${sent.invalid > 0 ? 'banner-warn' : 'banner-sent'}"
    id="sent"
    role="status"
    tabindex="-1"
  >
    ${raw(sent.invalid > 0 ? ICONS.alert : ICONS.sent)}
    <div>
      <p class="banner-title">${title}</p>
      <p>${detail}</p>
    </div>
  </div>`;
}

/**
 * The page's one primary action: send every saved answer not sent yet. A plain form (it works
 * without script), kept in view at the bottom of the screen while anything waits to be sent.
 */
export function renderSendBar(m: PageModel): Html {
  const { t } = m;
  const unsent = m.view.items.filter(isUnsent).length;
  return html`<section
    class="send-bar"
    id="send"
    data-unsent="${unsent}"
    aria-label="${t('send.label')}"
    ${flag('hidden', unsent === 0)}
  >
    <form method="post" action="${portalPath(m.view.intake_id, 'submit')}" class="send-form">
      <p class="send-text">${t('send.waiting', { count: unsent })}</p>
      <button type="submit" class="primary send">${t('send.button', { count: unsent })}</button>
    </form>
  </section>`;
}

function dueLine(m: PageModel): Html | string {
  const due = m.view.due_date;
  if (!due) return '';
  return html`<p class="due">
    ${raw(ICONS.calendar)}<span>${m.t('due', { date: formatDate(m.language, due) })}</span>
  </p>`;
}

export function renderPage(m: PageModel, assets: PageAssets, nonce: string): string {
  const { t, view } = m;
  const greeting = view.client_name ? t('greeting_named', { name: view.client_name }) : t('greeting');
  const intro = m.closed
    ? t('closed.text', { account: m.branding.accountName })
    : t('intro', { account: m.branding.accountName, count: view.items.length });
  const closedBanner = m.closed
    ? html`<div class="banner banner-closed" role="status">
        ${raw(ICONS.lock)}
        <div>
          <p class="banner-title">${t('closed.title')}</p>
          <p>${intro}</p>
        </div>
      </div>`
    : '';
  // The brief: escaped text (line breaks kept by CSS) and the sender's files to download.
  const briefFiles = view.brief_files.length
    ? html`<ul class="brief-files">
        ${view.brief_files.map(
          (f) =>
            html`<li>
              <a href="${f.url}" download="${f.name}">${f.name}</a> (${formatBytes(m.language, f.size)})
            </li>`,
        )}
      </ul>`
    : '';
  const brief =
    view.brief || view.brief_files.length
      ? html`<section class="brief" aria-labelledby="brief-title">
          <h2 id="brief-title">${t('brief')}</h2>
          ${view.brief ? html`<p>${view.brief}</p>` : ''}${briefFiles}
        </section>`
      : '';
  const data = { intake_id: view.intake_id, language: m.language, messages: clientMessages(t) };
  const body = html`<a class="skip" href="#items">${t('skip')}</a>
    ${topBar(m, m.branding)}
    <main id="main">
      <div class="intro">
        <h1>${view.project_name}</h1>
        <p class="greeting">
          ${greeting} ${m.closed ? t('closed.intro', { account: m.branding.accountName }) : intro}
        </p>
        ${m.closed ? '' : dueLine(m)}
      </div>
      ${closedBanner}${m.closed ? '' : renderSummary(m)} ${brief}
      <div class="items" id="items" tabindex="-1">${renderSections(m, (item) => renderCard(item, m))}</div>
      ${m.closed ? '' : renderSendBar(m)}
    </main>
    <footer class="foot">
      <p>${t('footer.private')}</p>
      <p>${t('footer.help', { account: m.branding.accountName })}</p>
    </footer>
    <script type="application/json" id="portal-data">
      ${jsonForScript(data)}
    </script>`;
  const head = m.closed ? '' : html`<script type="module" src="${assets.scriptPath}"></script>`;
  return shell(m, assets, nonce, `${view.project_name} · ${m.branding.accountName}`, body, head);
}
