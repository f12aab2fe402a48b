import { roleAllows } from '../../../domain/roles.js';
import { flag, html, type Html } from '../../portal/page/html.js';
import { csrfField, moment, type Chrome } from '../layout.js';

/** One comment as the owner's side reads it: who wrote it (the client, a person, a key) and when. */
export interface CommentView {
  id: string;
  who: string;
  fromClient: boolean;
  body: string;
  at: string;
}

/**
 * The conversation on an item, oldest first (bodies are text: escaped, line breaks kept by CSS), and
 * the form that writes to the client as the signed-in person; a role that may not write sees no form.
 */
export function conversation(
  chrome: Chrome,
  base: string,
  key: string,
  comments: readonly CommentView[],
): Html {
  const { t } = chrome;
  const mayWrite = !chrome.role || roleAllows(chrome.role, 'write');
  if (comments.length === 0 && !mayWrite) return html``;
  // The client's word is the last one: the reply form stands open.
  const answering = comments.at(-1)?.fromClient === true;
  return html`<div class="thread" id="thread-${key}">
    ${
      comments.length > 0
        ? html`<ol class="comments" aria-label="${t('comments.title', 'Conversation with the client')}">
            ${comments.map(
              (c) =>
                html`<li class="comment ${c.fromClient ? 'from-client' : 'from-owner'}" id="comment-${c.id}">
                  <p class="comment-meta"><strong>${c.who}</strong> · ${moment(c.at)}</p>
                  <p class="comment-body">${c.body}</p>
                </li>`,
            )}
          </ol>`
        : null
    }
    ${
      mayWrite
        ? html`<details class="comment-add" ${flag('open', answering)}>
            <summary>
              ${answering ? t('comments.reply', 'Reply to the client') : t('comments.add', 'Write to the client')}
            </summary>
            <form method="post" action="${base}/comments#item-${key}" data-inplace>
              ${csrfField(chrome.csrf)}
              <label for="comment-${key}">
                ${t('comments.label', 'Your comment (the client sees it on their page and gets an email)')}
              </label>
              <textarea id="comment-${key}" name="body" rows="3" maxlength="5000" required></textarea>
              <div class="actions">
                <button type="submit" class="secondary">${t('comments.send', 'Send comment')}</button>
              </div>
            </form>
          </details>`
        : null
    }
  </div>`;
}
