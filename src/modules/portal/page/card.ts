import { isFileType } from '../../../domain/items.js';
import { acceptAttribute, clientRules, describeConstraints } from './constraints.js';
import { valueControl } from './controls.js';
import { valueDisplay } from './display.js';
import { formatBytes, formatDateTime, formatNumber } from './format.js';
import { attr, flag, html, raw, type Html } from './html.js';
import { ICONS } from './icons.js';
import { renderThread } from './thread.js';
import { apiPath, isUnsent, portalPath, type PageModel, type ViewItem } from './model.js';

/** One card per item: label, help, constraints in words, status, revision note, and its control. */

export function effectiveMaxBytes(item: ViewItem, m: PageModel): number {
  return Math.min(item.constraints.max_bytes ?? Infinity, m.planMaxFileBytes);
}

/** Until the owner accepts it, an answer stays the client's to change (a change is sent again). */
export function editable(item: ViewItem, m: PageModel): boolean {
  return !m.closed && item.status !== 'approved';
}

function badge(item: ViewItem, m: PageModel): Html {
  const { t } = m;
  // Saved but not sent is said as such: it is not "to do", and the agency does not have it yet.
  const state = isUnsent(item) ? 'unsent' : item.status;
  const icon = {
    pending: ICONS.todo,
    unsent: ICONS.todo,
    submitted: ICONS.sent,
    approved: ICONS.check,
    needs_revision: ICONS.alert,
  }[state];
  return html`<span class="badge badge-${state}">${raw(icon)}<span>${t(`status.${state}`)}</span></span>`;
}

function fileLine(item: ViewItem, file: ViewItem['files'][number], m: PageModel, removable: boolean): Html {
  const { t } = m;
  const size = formatBytes(m.language, file.size);
  const dims =
    file.width && file.height
      ? ` · ${formatNumber(m.language, file.width)} × ${formatNumber(m.language, file.height)} px`
      : '';
  const previewable = /^image\/(png|jpeg|webp|gif|svg\+xml)$/.test(file.content_type);
  const thumb = previewable
    ? html`<img
        class="thumb"
        src="${apiPath(m.view.intake_id, 'items', item.key, 'files', file.file_id, 'thumbnail')}"
        alt=""
        width="56"
        height="56"
      />`
    : html`<span class="thumb thumb-file" aria-hidden="true">${raw(ICONS.file)}</span>`;
  const remove = removable
    ? html`<form
        method="post"
        action="${portalPath(m.view.intake_id, 'items', item.key, 'files', file.file_id, 'remove')}"
        class="remove-form"
        data-file-id="${file.file_id}"
      >
        <button type="submit" class="link danger">
          ${t('files.remove')}<span class="visually-hidden"> ${file.name}</span>
        </button>
      </form>`
    : '';
  return html`<li class="file" data-file-id="${file.file_id}">
    ${thumb}<span class="file-text"
      ><span class="file-name">${file.name}</span><span class="file-meta">${size}${dims}</span></span
    >${remove}
  </li>`;
}

function fileArea(item: ViewItem, m: PageModel, canEdit: boolean): Html {
  const { t } = m;
  const id = `item-${item.key}-file`;
  const files = html`<ul
    class="files"
    id="item-${item.key}-files"
    aria-label="${t('files.list', { label: item.label })}"
  >
    ${item.files.map((f) => fileLine(item, f, m, canEdit))}
  </ul>`;
  if (!canEdit) return item.files.length > 0 ? files : html`<p class="muted">${t('empty')}</p>`;
  const maxBytes = effectiveMaxBytes(item, m);
  const multiple = item.type === 'file_list';
  const accept = acceptAttribute(item);
  const camera =
    item.type === 'image' || (accept ?? '').includes('image/')
      ? html`<span class="camera"
          ><input
            type="file"
            class="file-input"
            id="${id}-camera"
            accept="image/*"
            capture="environment"
          /><label for="${id}-camera" class="button secondary"
            >${raw(ICONS.camera)}<span>${t('files.camera')}</span></label
          ></span
        >`
      : '';
  const rules = JSON.stringify(clientRules(item, maxBytes));
  return html`${files}
    <form
      method="post"
      enctype="multipart/form-data"
      action="${portalPath(m.view.intake_id, 'items', item.key, 'upload')}"
      class="upload-form"
      data-tus="${apiPath(m.view.intake_id, 'items', item.key, 'tus')}"
      data-rules="${rules}"
    >
      <div class="drop" data-drop>
        <input
          type="file"
          class="file-input"
          id="${id}"
          name="file"
          ${attr('accept', accept)}${flag('multiple', multiple)}${attr(
            'aria-describedby',
            `item-${item.key}-rules`,
          )}
        />
        <label for="${id}" class="drop-label"
          >${raw(ICONS.upload)}<span class="drop-main"
            >${t(multiple ? 'files.choose_many' : item.files.length > 0 ? 'files.replace' : 'files.choose')}</span
          ><span class="drop-hint">${t('files.or_drag')}</span></label
        >
        ${camera}
      </div>
      <ul class="uploads" aria-live="polite"></ul>
      <button type="submit" class="secondary nojs-only">${t('files.upload')}</button>
    </form>`;
}

function formError(item: ViewItem, m: PageModel): Html {
  const error = m.errors.get(item.key);
  return html`<p class="form-error" id="item-${item.key}-error" role="alert" ${flag('hidden', !error)}>
    ${error?.message ?? ''}
  </p>`;
}

function savedLine(item: ViewItem, m: PageModel): Html | string {
  const notice = m.notice?.key === item.key ? m.notice.kind : undefined;
  if (notice === 'saved' || notice === 'uploaded' || notice === 'removed') return m.t(`notice.${notice}`);
  if (!item.saved_at) return '';
  // The script shows the time in the browser's own time zone; without it, the client's zone or UTC.
  const [before, after] = m.t('saved_at', { time: '\u0000' }).split('\u0000');
  return html`${before ?? ''}<time datetime="${item.saved_at}" data-local
      >${formatDateTime(m.language, item.saved_at, m.timeZone)}</time
    >${after ?? ''}`;
}

function itemBody(item: ViewItem, m: PageModel): Html {
  const { t } = m;
  const canEdit = editable(item, m);
  const fileKind = isFileType(item.type);
  const action = portalPath(m.view.intake_id, 'items', item.key);
  if (!canEdit) {
    const shown = fileKind ? fileArea(item, m, false) : valueDisplay(item, m);
    const note = item.status === 'approved' ? t('card.approved_note') : '';
    return html`${shown}${note ? html`<p class="state-note">${note}</p>` : ''}`;
  }
  const submitLabel = item.status === 'pending' ? t('card.submit') : t('card.resubmit');
  // The page's one send is the primary action; sending one item alone stays possible, as a secondary.
  const sendOne =
    item.status !== 'submitted' || isUnsent(item)
      ? html`<button type="submit" name="action" value="submit" class="secondary submit">
          ${submitLabel}
        </button>`
      : '';
  const note =
    item.status === 'submitted'
      ? html`<p class="state-note">${t('card.submitted_note', { account: m.branding.accountName })}</p>`
      : '';
  const actions = (extra: Html | string) =>
    html`${note}
      <div class="actions">
        ${extra}${sendOne}
        <span class="save-state" aria-live="polite">${savedLine(item, m)}</span>
      </div>`;
  if (fileKind) {
    return html`${fileArea(item, m, true)}
      <form method="post" action="${action}" class="submit-form">${formError(item, m)}${actions('')}</form>`;
  }
  const error = m.errors.get(item.key);
  return html`<form
    method="post"
    action="${action}"
    class="item-form"
    data-key="${item.key}"
    data-type="${item.type}"
    data-saved-at="${item.saved_at ?? ''}"
    novalidate
  >
    ${valueControl(item, m, error, false)}${formError(item, m)}${actions(
      html`<button type="submit" name="action" value="save" class="secondary nojs-only">
        ${t('card.save')}
      </button>`,
    )}
  </form>`;
}

/** One item's card; its title is a level below its section's heading (h3), or h2 outside a section. */
export function renderCard(item: ViewItem, m: PageModel): Html {
  const { t } = m;
  const rules = describeConstraints(t, m.language, item, effectiveMaxBytes(item, m), m.country);
  const optional = item.required ? '' : html`<span class="optional">${t('card.optional')}</span>`;
  const revision =
    item.status === 'needs_revision'
      ? html`<div class="revision" role="note">
          <p class="revision-title">${raw(ICONS.alert)}${t('card.revision_title')}</p>
          ${item.revision_note ? html`<p class="revision-note">${item.revision_note}</p>` : ''}
        </div>`
      : item.review_note
        ? html`<div class="review" role="note">
            <p class="revision-title">${t('card.review_note_title')}</p>
            <p class="revision-note">${item.review_note}</p>
          </div>`
        : '';
  // The rules guide an answer still to give; on an accepted item or a closed request they are noise.
  const rulesBlock =
    rules.length > 0 && editable(item, m)
      ? html`<ul class="rules" id="item-${item.key}-rules" aria-label="${t('card.requirements')}">
          ${rules.map((r) => html`<li>${r}</li>`)}
        </ul>`
      : html`<span id="item-${item.key}-rules" hidden></span>`;
  return html`<section
    class="card status-${item.status}"
    id="item-${item.key}"
    data-key="${item.key}"
    data-status="${item.status}"
    ${flag('data-controls', m.controllers.has(item.key))}
    aria-labelledby="item-${item.key}-title"
  >
    <div class="card-head">
      ${
        item.section
          ? html`<h3 class="item-title" id="item-${item.key}-title" tabindex="-1">${item.label}</h3>`
          : html`<h2 class="item-title" id="item-${item.key}-title" tabindex="-1">${item.label}</h2>`
      }
      <span class="tags">${optional}${badge(item, m)}</span>
    </div>
    ${revision}${item.help ? html`<p class="help" id="item-${item.key}-help">${item.help}</p>` : ''}${rulesBlock}
    ${itemBody(item, m)}${renderThread(item, m)}
  </section>`;
}
