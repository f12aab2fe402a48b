import { sectionGroups } from '../../../domain/conditions.js';
import { formatDateTime, formatNumber } from './format.js';
import { html, type Html } from './html.js';
import { portalPath, type PageModel, type ViewItem } from './model.js';

/**
 * The conversation under an item (the sender's and the client's comments, oldest first, escaped;
 * line breaks kept by CSS) with a plain form to add one, and the request's sections.
 */
export function renderThread(item: ViewItem, m: PageModel): Html {
  const { t } = m;
  const comments = m.view.comments.filter((c) => c.item_key === item.key);
  const list =
    comments.length > 0
      ? html`<ol class="comments" aria-label="${t('comments.title')}">
          ${comments.map(
            (c) =>
              html`<li class="comment from-${c.author}">
                <p class="comment-meta">
                  <strong>${c.author === 'client' ? t('comments.you') : m.branding.accountName}</strong>
                  <time datetime="${c.created_at}" data-local
                    >${formatDateTime(m.language, c.created_at, m.timeZone)}</time
                  >
                </p>
                <p class="comment-body">${c.body}</p>
              </li>`,
          )}
        </ol>`
      : '';
  const form = m.closed
    ? ''
    : html`<details class="comment-add">
        <summary>${t('comments.add', { account: m.branding.accountName })}</summary>
        <form
          method="post"
          action="${portalPath(m.view.intake_id, 'items', item.key, 'comments')}"
          class="comment-form"
        >
          <label for="comment-${item.key}" class="visually-hidden">${t('comments.label')}</label>
          <textarea id="comment-${item.key}" name="body" rows="3" maxlength="5000" required></textarea>
          <button type="submit" class="secondary">${t('comments.send')}</button>
        </form>
      </details>`;
  if (!list && !form) return html``;
  return html`<div class="thread" id="comments-${item.key}">${list}${form}</div>`;
}

/** The items in their sections: a heading and the section's progress over consecutive items sharing it. */
export function renderSections(m: PageModel, card: (item: ViewItem) => Html): Html[] {
  return sectionGroups(m.view.items).map((group, index) => {
    if (group.section === null) return html`${group.items.map(card)}`;
    const done = group.items.filter((i) => i.status === 'submitted' || i.status === 'approved').length;
    const progress = m.t('section_progress', {
      done: formatNumber(m.language, done),
      total: formatNumber(m.language, group.items.length),
    });
    return html`<section class="portal-section" aria-labelledby="section-${index}">
      <div class="section-head">
        <h2 class="section-title" id="section-${index}">${group.section}</h2>
        <span class="section-progress">${progress}</span>
      </div>
      ${group.items.map(card)}
    </section>`;
  });
}
