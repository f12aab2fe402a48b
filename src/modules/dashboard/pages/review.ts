import { html, type Html } from '../../portal/page/html.js';
import { formatBytes } from '../../portal/page/format.js';
import { swatch } from '../../portal/page/display.js';
import { answerView, type AnswerDefinition } from '../answer-view.js';
import { actionForm, badge, csrfField, may, moment, tHtml, type Chrome } from '../layout.js';
import { conversation, type CommentView } from './conversation.js';

export type { CommentView } from './conversation.js';

/** One item of an intake as the review page shows it. */
export interface ItemView extends AnswerDefinition {
  key: string;
  label: string;
  status: string;
  required: boolean;
  owner: boolean;
  revisionNote: string | null;
  submittedAt: string | null;
  approvedAt: string | null;
  value: unknown;
  secret: boolean;
  /** A secret's first (and only) reveal, if it happened. */
  secretRevealedAt: string | null;
  /** Whether the client's secret is stored and may be revealed now. */
  secretReady: boolean;
  files: {
    id: string;
    name: string;
    size: number;
    contentType: string;
    url: string;
    preview: string | null;
  }[];
  /** An owner item's proposal (agent), if any. */
  proposed: { value: unknown; rationale: string } | null;
  /** The item's section (consecutive items with the same section form one group), null when none. */
  section: string | null;
  /** Why the item is not needed now (an earlier answer leaves its show_if unmet), in words; null when it applies. */
  notNeeded: string | null;
  /** The item's conversation with the client, oldest first. */
  comments: CommentView[];
}

/** What the card says after an action on it (the notice of post/redirect/get, or the secret just revealed). */
export interface CardNote {
  notice?: string | null;
  revealed?: string;
}

/** An item type in words ("Image", "File list"), in the page's language. */
export function typeName(chrome: Chrome, type: string): string {
  const fallback = type.charAt(0).toUpperCase() + type.slice(1).replace(/_/g, ' ');
  return chrome.t(`review.types.${type}`, fallback);
}

function answer(chrome: Chrome, item: ItemView): Html {
  const { t } = chrome;
  const view = answerView(item, item.value, {
    lang: chrome.lang,
    yes: t('review.yes', 'Yes'),
    no: t('review.no', 'No'),
  });
  switch (view.kind) {
    case 'empty':
      return html`<p class="muted">${t('detail.nothing', 'Nothing yet.')}</p>`;
    case 'text':
      return html`<p class="answer ${view.long ? 'long' : ''}">${view.text}</p>`;
    case 'link':
      return html`<p class="answer"><a href="${view.href}" rel="noopener noreferrer">${view.text}</a></p>`;
    case 'list':
      return html`<ul class="answer">
        ${view.entries.map((e) => html`<li>${e}</li>`)}
      </ul>`;
    case 'colours':
      return html`<ul class="answer swatches">
        ${view.colours.map((c) => html`<li>${swatch(c)} <code>${c}</code></li>`)}
      </ul>`;
    case 'fields':
      return html`<dl class="answer fields">
        ${view.fields.map(
          (f) =>
            html`<div>
              <dt>${f.label}</dt>
              <dd>${f.value}</dd>
            </div>`,
        )}
      </dl>`;
  }
}

function secretAnswer(chrome: Chrome, intakeId: string, item: ItemView, revealed?: string): Html {
  const { t } = chrome;
  if (revealed !== undefined) {
    return html`<div class="secret-shown" role="status">
      <p>${t('review.secret_once', 'Shown this once: copy it now. It cannot be shown again.')}</p>
      <p class="secret" id="secret-${item.key}">${revealed}</p>
      <button
        type="button"
        class="secondary"
        data-copy="secret-${item.key}"
        data-copied="${t('secret.copied', 'Copied')}"
        hidden
      >
        ${t('secret.copy', 'Copy')}
      </button>
    </div>`;
  }
  if (item.secretRevealedAt) {
    return html`<p class="muted">
      ${tHtml(t, 'review.secret_gone', 'Revealed {{at}}; a secret is shown only once.', { at: moment(item.secretRevealedAt) })}
    </p>`;
  }
  if (!item.secretReady) return html`<p class="muted">${t('detail.nothing', 'Nothing yet.')}</p>`;
  if (!may(chrome, 'POST', `/dashboard/intakes/${intakeId}/items/${item.key}/reveal`)) {
    return html`<p class="muted">
      ${t('review.secret_hidden', 'A secret: hidden until you reveal it, and then shown only once.')}
    </p>`;
  }
  return html`<form
    method="post"
    action="/dashboard/intakes/${intakeId}/items/${item.key}/reveal#item-${item.key}"
    data-inplace
    data-confirm="${t('review.reveal_confirm', 'Show the secret now? It can be shown only once, and the reveal is recorded in the audit log.')}"
  >
    ${csrfField(chrome.csrf)}
    <p class="muted">
      ${t('review.secret_hidden', 'A secret: hidden until you reveal it, and then shown only once.')}
    </p>
    <button type="submit" class="secondary">${t('review.reveal', 'Reveal once')}</button>
  </form>`;
}

function files(chrome: Chrome, item: ItemView): Html {
  const { t } = chrome;
  return html`<ul class="files">
    ${item.files.map(
      (f) =>
        html`<li>
          ${
            f.preview
              ? html`<img
                  class="thumb"
                  src="${f.preview}"
                  alt="${t('detail.preview_of', 'Preview of {{name}}', { name: f.name })}"
                  width="112"
                  height="112"
                />`
              : html`<span class="file-icon" aria-hidden="true"
                  >${(f.name.split('.').pop() ?? '').slice(0, 4).toUpperCase()}</span
                >`
          }
          <span
            ><a href="${f.url}" download>${f.name}</a><br /><span class="muted"
              >${formatBytes(chrome.lang, f.size)} · ${f.contentType}</span
            ></span
          >
        </li>`,
    )}
  </ul>`;
}

function reviewActions(chrome: Chrome, base: string, item: ItemView): Html {
  const { t } = chrome;
  const anchor = `#item-${item.key}`;
  return html`<div class="actions">
    ${
      item.status === 'submitted'
        ? html`<form method="post" action="${base}/approve${anchor}" data-inplace>
            ${csrfField(chrome.csrf)}
            <button type="submit">${t('detail.approve', 'Approve')}</button>
          </form>`
        : null
    }
    <details>
      <summary>${t('detail.request_revision', 'Request a revision')}</summary>
      <form method="post" action="${base}/revision${anchor}" data-inplace>
        ${csrfField(chrome.csrf)}
        <label for="note-${item.key}">${t('detail.note', 'What should the client change?')}</label>
        <textarea id="note-${item.key}" name="note" required maxlength="2000"></textarea>
        <div class="actions">
          <button type="submit" class="secondary">
            ${t('detail.send_revision', 'Send revision request')}
          </button>
        </div>
      </form>
    </details>
  </div>`;
}

/** A value as text: scalars as themselves, anything else as JSON. */
export function textOf(value: unknown): string {
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean')
    return String(value);
  return JSON.stringify(value) ?? '';
}

function decisionForm(chrome: Chrome, base: string, item: ItemView): Html {
  const { t } = chrome;
  return html`<form method="post" action="${base}/decide" class="actions">
    ${csrfField(chrome.csrf)}
    ${item.proposed ? html`<p>${t('detail.proposed', 'Proposed:')} <code>${textOf(item.proposed.value)}</code> — ${item.proposed.rationale}</p>` : null}
    <label for="decide-${item.key}">${t('detail.decision', 'Your answer (JSON or text)')}</label>
    <input
      type="text"
      id="decide-${item.key}"
      name="value"
      value="${item.proposed ? textOf(item.proposed.value) : ''}"
    />
    <button type="submit">${t('detail.decide', 'Save answer')}</button>
  </form>`;
}

/**
 * One item's card: its answer as people read it, approve / ask for changes in place, and the
 * conversation with the client. Inside a section the item's title is a level below the section's.
 */
export function itemCard(
  chrome: Chrome,
  intakeId: string,
  item: ItemView,
  note: CardNote = {},
  headingLevel: 3 | 4 = 3,
): Html {
  const { t } = chrome;
  const base = `/dashboard/intakes/${intakeId}/items/${item.key}`;
  const reviewable =
    !item.owner && item.notNeeded === null && (item.status === 'submitted' || item.status === 'approved');
  const status =
    item.notNeeded !== null
      ? badge('not_needed', t('items.not_needed_badge', 'not needed'))
      : badge(item.status, t(`item_status.${item.status}`, item.status.replace('_', ' ')));
  const facts = [
    typeName(chrome, item.type),
    item.required ? null : t('detail.optional', 'optional'),
    item.owner ? t('detail.owner_item', 'your decision') : null,
  ].filter((f): f is string => f !== null);
  const title =
    headingLevel === 4
      ? html`<h4 class="item-title" id="item-${item.key}-title" tabindex="-1">${item.label} ${status}</h4>`
      : html`<h3 class="item-title" id="item-${item.key}-title" tabindex="-1">${item.label} ${status}</h3>`;
  return html`<section
    class="item ${item.notNeeded !== null ? 'not-needed' : ''}"
    id="item-${item.key}"
    aria-labelledby="item-${item.key}-title"
    data-item="${item.key}"
  >
    ${title}
    ${note.notice ? html`<div class="notice" role="status" tabindex="-1">${note.notice}</div>` : null}
    ${item.notNeeded !== null ? html`<p class="not-needed-reason">${t('items.not_needed', 'Not needed: {{reason}}', { reason: item.notNeeded })}</p>` : null}
    <p class="muted">
      ${facts.join(' · ')}
      ${item.submittedAt ? html` · ${tHtml(t, 'detail.submitted_at', 'submitted {{at}}', { at: moment(item.submittedAt) })}` : null}
      ${item.approvedAt ? html` · ${tHtml(t, 'detail.approved_at', 'approved {{at}}', { at: moment(item.approvedAt) })}` : null}
    </p>
    ${item.revisionNote ? html`<p><strong>${t('detail.revision_note', 'Revision requested:')}</strong> ${item.revisionNote}</p>` : null}
    ${item.secret ? secretAnswer(chrome, intakeId, item, note.revealed) : item.files.length > 0 ? files(chrome, item) : answer(chrome, item)}
    ${item.owner && may(chrome, 'POST', `${base}/decide`) ? decisionForm(chrome, base, item) : null}
    ${reviewable && may(chrome, 'POST', `${base}/approve`) ? reviewActions(chrome, base, item) : null}
    ${conversation(chrome, base, item.key, item.comments)}
  </section>`;
}

/** "3 answers wait for your review" and the one button that approves them all. */
export function reviewSummary(chrome: Chrome, intakeId: string, awaiting: number, open: boolean): Html {
  const { t } = chrome;
  return html`<div id="review-summary" data-refresh>
    ${
      awaiting > 0 && open
        ? html`<div class="card review-summary">
            <p>
              <strong
                >${t('review.waiting', '{{count}} answers wait for your review', { count: awaiting })}</strong
              >
            </p>
            ${actionForm(
              chrome,
              `/dashboard/intakes/${intakeId}/approve`,
              t('review.approve_all', 'Approve all {{count}}', { count: awaiting }),
            )}
          </div>`
        : null
    }
  </div>`;
}

/** One line of an intake's history: what happened, to which item, by whom. */
export interface HistoryEntry {
  at: string;
  what: string;
  item: string | null;
  who: string | null;
  note: string | null;
}

export function historyList(chrome: Chrome, entries: HistoryEntry[]): Html {
  const { t } = chrome;
  return html`<div id="history" data-refresh>
    ${
      entries.length === 0
        ? html`<p class="muted">${t('detail.no_events', 'No events yet.')}</p>`
        : html`<ol class="card history">
            ${entries.map(
              (e) =>
                html`<li>
                  <span
                    >${e.item ? html`<strong>${e.item}</strong>: ` : null}${e.what}${e.who ? html` <span class="muted">· ${e.who}</span>` : null}</span
                  >
                  ${e.note ? html`<q>${e.note}</q>` : null}
                  <span class="muted">· ${moment(e.at)}</span>
                </li>`,
            )}
          </ol>`
    }
  </div>`;
}
