import type { z } from 'zod';
import { flag, html, type Html } from '../../portal/page/html.js';
import type { Intake } from '../../intakes/intakes.schemas.js';
import type { ItemFormRow } from '../item-form.js';
import { actionForm, badge, csrfField, renderPage, type Chrome } from '../layout.js';
import {
  cardTemplate,
  itemCard,
  refreshDefault,
  removeButton,
  typeIcon,
  typeName,
  typePalette,
} from './builder-items.js';
import { portalLink } from './builder-preview.js';

type IntakeRecord = z.infer<typeof Intake>;

/** What the edit page shows besides the stored intake: a card as posted, a question, new cards. */
export interface EditState {
  /** An item's card as the owner posted it (after an error or a question). */
  item: { key: string; row: ItemFormRow; discardQuestion: string | null } | null;
  /** The cards of the add-items form as posted (no-script round trips). */
  addRows: ItemFormRow[];
  addAdded: number | null;
  folders: { id: string; name: string }[];
  itemRows: Map<string, ItemFormRow>;
}

/** An item the client has answered (or that was decided) cannot be removed, only changed. */
function answered(item: IntakeRecord['items'][number]): boolean {
  return item.submitted_at !== null || item.status !== 'pending' || item.decided_by !== null;
}

function settingsForm(chrome: Chrome, intake: IntakeRecord, folders: EditState['folders']): Html {
  const { t } = chrome;
  const base = `/dashboard/intakes/${intake.id}`;
  const schedules = [
    'default',
    'gentle',
    'aggressive',
    'off',
    ...(intake.chase_schedule === 'custom' ? ['custom'] : []),
  ];
  const languages = [
    ['en', 'English'],
    ['de', 'Deutsch'],
    ['fr', 'Français'],
    ['es', 'Español'],
    ['nl', 'Nederlands'],
  ];
  return html`<form method="post" action="${base}/edit/settings" class="card" id="settings">
    ${csrfField(chrome.csrf)}
    <h2>${t('builder.edit_details', 'Details')}</h2>
    <div class="grid">
      <div>
        <label for="s-project_name">${t('intakes.project', 'Project')}</label>
        <input
          type="text"
          id="s-project_name"
          name="project_name"
          value="${intake.project_name}"
          required
          maxlength="200"
        />
      </div>
      <div>
        <label for="s-due_date">${t('intakes.due_date', 'Due date')}</label>
        <input type="date" id="s-due_date" name="due_date" value="${intake.due_date ?? ''}" />
      </div>
      <div>
        <label for="s-chase_schedule">${t('intakes.chase_schedule', 'Reminders')}</label>
        <select id="s-chase_schedule" name="chase_schedule">
          ${schedules.map((s) => html`<option value="${s}" ${flag('selected', intake.chase_schedule === s)}>${t(`chase.${s}`, s)}</option>`)}
        </select>
      </div>
      <div>
        <label for="s-folder_id">${t('builder.folder', 'Folder')}</label>
        <select id="s-folder_id" name="folder_id">
          <option value="">${t('builder.no_folder', 'No folder')}</option>
          ${folders.map((f) => html`<option value="${f.id}" ${flag('selected', intake.folder_id === f.id)}>${f.name}</option>`)}
        </select>
      </div>
      <div>
        <label for="s-new_folder">${t('builder.new_folder', 'Or file it in a new folder')}</label>
        <input type="text" id="s-new_folder" name="new_folder" maxlength="100" />
      </div>
      <div>
        <label for="s-client_name">${t('intakes.client_name', 'Client name')}</label>
        <input
          type="text"
          id="s-client_name"
          name="client_name"
          value="${intake.client.name ?? ''}"
          maxlength="200"
        />
      </div>
      <div>
        <label for="s-client_phone"
          >${t('builder.client_phone', 'Client mobile (for SMS reminders, optional)')}</label
        >
        <input type="tel" id="s-client_phone" name="client_phone" value="${intake.client.phone ?? ''}" />
      </div>
      <div>
        <label for="s-client_language">${t('intakes.language', 'Client language')}</label>
        <select id="s-client_language" name="client_language">
          ${languages.map(([value, label]) => html`<option value="${value}" ${flag('selected', intake.client.language === value)}>${label}</option>`)}
        </select>
      </div>
    </div>
    <div class="actions"><button type="submit">${t('builder.save_details', 'Save details')}</button></div>
  </form>`;
}

function itemForm(
  chrome: Chrome,
  intake: IntakeRecord,
  item: IntakeRecord['items'][number],
  i: number,
  state: EditState,
): Html {
  const { t } = chrome;
  const action = `/dashboard/intakes/${intake.id}/edit/items/${item.key}`;
  const posted = state.item?.key === item.key ? state.item : null;
  const row = posted?.row ?? state.itemRows.get(item.key);
  if (!row) return html``;
  const question = posted?.discardQuestion
    ? html`<div class="question" role="alert" id="question">
        <p><strong>${t('builder.discard_title', 'The client’s answer would be discarded')}</strong></p>
        <p>${posted.discardQuestion}</p>
        <p>
          ${t('builder.discard_question', 'Change the item and discard the client’s answer? They will be asked for it again.')}
        </p>
        <div class="actions">
          <button type="submit" name="discard" value="on" class="danger">
            ${t('builder.discard_yes', 'Discard the answer and save')}
          </button>
          <a class="button secondary" href="/dashboard/intakes/${intake.id}/edit#item-form-${item.key}"
            >${t('builder.discard_no', 'Keep the answer (cancel)')}</a
          >
        </div>
      </div>`
    : null;
  const actions = html`${question}
    <div class="actions">
      <button type="submit">${t('builder.save_item', 'Save this item')}</button>
      ${
        answered(item)
          ? html`<span class="muted"
              >${t('builder.cannot_remove', 'Answered: it can be changed, not removed.')}</span
            >`
          : html`<button type="submit" class="secondary" formaction="${action}/remove">
              ${t('builder.remove_item', 'Remove this item')}
            </button>`
      }
    </div>`;
  // Each item folds into one line; the one with a question or an error stays open.
  return html`<details class="item-edit" id="item-form-${item.key}" ${flag('open', posted !== null)}>
    <summary>
      <span class="type-icon">${typeIcon(item.type)}</span> ${item.label}
      <span class="muted">· ${typeName(chrome, item.type)}</span>
      ${badge(item.status, t(`item_status.${item.status}`, item.status.replace('_', ' ')))}
    </summary>
    <form method="post" action="${action}">
      ${csrfField(chrome.csrf)}
      ${itemCard(chrome, { index: 0, idPrefix: `e${i}-` }, row, {
        roundTrip: false,
        keyFixed: true,
        legend: item.label,
        actions,
      })}
    </form>
  </details>`;
}

function addForm(chrome: Chrome, intake: IntakeRecord, state: EditState): Html {
  const { t } = chrome;
  const path = `/dashboard/intakes/${intake.id}/edit/items`;
  return html`<form method="post" action="${path}" class="card builder" id="add-items" data-builder>
    ${csrfField(chrome.csrf)} ${refreshDefault(chrome)}
    <h2>${t('builder.add_items', 'Add items')}</h2>
    <p class="muted">
      ${t('builder.add_items_hint', 'New items are added to the client’s page; the client is told by email.')}
    </p>
    <div
      id="item-rows"
      data-item-cards
      data-item-legend="${chrome.t('builder.item_n', 'Item {{n}}', { n: '{{n}}' })}"
    >
      ${state.addRows.map(
        (row, i) =>
          html`${state.addAdded === i ? html`<span id="added"></span>` : null}${itemCard(
            chrome,
            { index: i, idPrefix: 'n' },
            row,
            {
              roundTrip: path,
              actions: removeButton(chrome, i, path),
            },
          )}`,
      )}
    </div>
    ${typePalette(chrome, path)} ${cardTemplate(chrome, path)}
    <div class="actions">
      <button type="submit" name="intent" value="save">
        ${t('builder.add_to_intake', 'Add to the intake')}
      </button>
    </div>
  </form>`;
}

function recipientsSection(chrome: Chrome, intake: IntakeRecord): Html {
  const { t } = chrome;
  const base = `/dashboard/intakes/${intake.id}/edit/recipients`;
  return html`<section class="card" id="recipients" aria-labelledby="recipients-title">
    <h2 id="recipients-title">${t('builder.recipients', 'Who gets the emails')}</h2>
    <ul class="recipients">
      ${intake.recipients.map(
        (r) =>
          html`<li>
            <span>${r.name ? `${r.name} ` : ''}&lt;${r.email}&gt;</span>
            ${r.role === 'client' ? badge('client', t('builder.role_client', 'client')) : null}
            ${r.suppressed ? badge('bounced', t('builder.suppressed', 'emails bounce')) : null}
            ${r.opted_out_at ? badge('opted_out', t('builder.opted_out', 'no reminders (opted out)')) : null}
            <span class="actions">
              ${r.suppressed ? actionForm(chrome, `${base}/reinstate`, t('builder.reinstate', 'Send to this address again'), { secondary: true, fields: { email: r.email } }) : null}
              ${r.role === 'also_notify' ? actionForm(chrome, `${base}/remove`, t('builder.remove_recipient', 'Remove'), { secondary: true, fields: { email: r.email } }) : null}
            </span>
          </li>`,
      )}
    </ul>
    <form method="post" action="${base}" class="grid">
      ${csrfField(chrome.csrf)}
      <div>
        <label for="r-email">${t('builder.recipient_email', 'Also send to (email)')}</label>
        <input type="email" id="r-email" name="email" required maxlength="254" />
      </div>
      <div>
        <label for="r-name">${t('builder.recipient_name', 'Their name (optional)')}</label>
        <input type="text" id="r-name" name="name" maxlength="200" />
      </div>
      <div class="actions">
        <button type="submit" class="secondary">${t('builder.add_recipient', 'Add this person')}</button>
      </div>
    </form>
  </section>`;
}

/** Editing an intake, drafts and sent ones alike, through the services the REST API uses. */
export function editPage(
  chrome: Chrome,
  intake: IntakeRecord,
  state: EditState,
  notice: string | null,
  error: string | null,
): string {
  const { t } = chrome;
  const base = `/dashboard/intakes/${intake.id}`;
  const body = html`<p><a href="${base}">← ${intake.project_name}</a></p>
    <h1>${t('builder.edit_title', 'Edit “{{name}}”', { name: intake.project_name })}</h1>
    <p>${badge(intake.status, t(`status.${intake.status}`, intake.status.replace('_', ' ')))}</p>
    ${intake.status === 'draft' ? null : portalLink(chrome, intake.portal_url)}
    <div class="actions">
      <a class="button secondary" href="${base}/preview">${t('builder.preview', 'Preview as the client')}</a>
    </div>
    ${settingsForm(chrome, intake, state.folders)}
    <h2 id="items">${t('detail.items', 'Items')}</h2>
    ${intake.items.map((item, i) => itemForm(chrome, intake, item, i, state))}
    ${addForm(chrome, intake, state)} ${recipientsSection(chrome, intake)}`;
  return renderPage(chrome, {
    title: t('builder.edit_title', 'Edit “{{name}}”', { name: intake.project_name }),
    section: 'intakes',
    body,
    notice,
    error,
  });
}
