import { flag, html, type Html } from '../../portal/page/html.js';
import type { ItemFormRow } from '../item-form.js';
import { csrfField, renderPage, type Chrome } from '../layout.js';
import { cardTemplate, itemCard, refreshDefault, removeButton, typePalette } from './builder-items.js';

/** The new-intake builder: start from a ready-made or saved template or from nothing, then edit. */
export interface BuilderValues {
  /** Legacy form: create straight from a saved template (template_id) instead of the cards. */
  source: 'scratch' | 'template';
  template_id: string;
  project_name: string;
  client_email: string;
  client_name: string;
  client_language: string;
  client_phone: string;
  due_date: string;
  chase_schedule: string;
  client_brief: string;
  send: boolean;
  rows: ItemFormRow[];
  /** Index of the card just added without script (the page scrolls to it). */
  added: number | null;
  /** What the cards were started from, to say so. */
  startedFrom: string | null;
}

export interface StartChoice {
  href: string;
  name: string;
  description: string;
}

export const BUILDER_PATH = '/dashboard/intakes';

function startSection(chrome: Chrome, starters: StartChoice[], saved: StartChoice[], started: boolean): Html {
  const { t } = chrome;
  const choice = (c: StartChoice) =>
    html`<li>
      <a href="${c.href}" class="start-choice"><strong>${c.name}</strong></a>
      ${c.description ? html`<span class="muted">${c.description}</span>` : null}
    </li>`;
  // Once the cards hold a template, choosing another folds away (it would replace them).
  return html`<details class="card start" ${flag('open', !started)}>
    <summary><h2 id="start-title">${t('builder.start_title', 'Start from a template')}</h2></summary>
    <p class="muted">
      ${t('builder.start_hint', 'Choose one to fill in the items below, then change what you like. Nothing is sent until you say so.')}
    </p>
    <ul class="start-list">
      ${starters.map(choice)} ${saved.map(choice)}
      <li>
        <a href="/dashboard/intakes/new" class="start-choice"
          ><strong>${t('builder.start_blank', 'Blank')}</strong></a
        >
        <span class="muted">${t('builder.start_blank_hint', 'Start with one empty item.')}</span>
      </li>
    </ul>
  </details>`;
}

export function builderPage(
  chrome: Chrome,
  data: { starters: StartChoice[]; saved: StartChoice[]; values: BuilderValues },
  error: string | null,
): string {
  const { t } = chrome;
  const values = data.values;
  type TextValue = 'project_name' | 'client_email' | 'client_name' | 'client_phone' | 'due_date';
  const input = (name: TextValue, label: string, type = 'text', required = false, hint?: string) =>
    html`<div>
      <label for="f-${name}">${label}</label
      ><input
        type="${type}"
        id="f-${name}"
        name="${name}"
        value="${values[name]}"
        ${flag('required', required)}
      />${hint ? html`<small class="muted">${hint}</small>` : null}
    </div>`;
  const cards = values.rows.map(
    (row, i) =>
      html`${values.added === i ? html`<span id="added"></span>` : null}${itemCard(
        chrome,
        { index: i, idPrefix: '' },
        row,
        {
          roundTrip: BUILDER_PATH,
          actions: removeButton(chrome, i, BUILDER_PATH),
        },
      )}`,
  );
  const body = html`<p><a href="/dashboard/intakes">← ${t('intakes.title', 'Intakes')}</a></p>
    <h1>${t('intakes.new', 'New intake')}</h1>
    ${startSection(
      chrome,
      data.starters,
      data.saved,
      values.rows.some((r) => r.label.trim() !== ''),
    )}
    <form method="post" action="${BUILDER_PATH}" class="card builder" data-builder>
      ${csrfField(chrome.csrf)} ${refreshDefault(chrome)}
      ${
        values.startedFrom
          ? html`<p class="notice" role="status">
              ${t('builder.started_from', 'Started from “{{name}}”. Change anything below.', { name: values.startedFrom })}
            </p>`
          : null
      }
      <fieldset>
        <legend>${t('intakes.project_client', 'Project and client')}</legend>
        <div class="grid">
          ${input('project_name', t('intakes.project', 'Project'), 'text', true)}
          ${input('client_email', t('intakes.client_email', 'Client email'), 'email', true)}
          ${input('client_name', t('intakes.client_name', 'Client name'))}
          <div>
            <label for="f-client_language">${t('intakes.language', 'Client language')}</label>
            <select id="f-client_language" name="client_language">
              ${[
                ['', t('intakes.account_language', 'Account default')],
                ['en', 'English'],
                ['de', 'Deutsch'],
                ['fr', 'Français'],
                ['es', 'Español'],
                ['nl', 'Nederlands'],
              ].map(
                ([value, label]) =>
                  html`<option value="${value}" ${flag('selected', values.client_language === value)}>
                    ${label}
                  </option>`,
              )}
            </select>
          </div>
          ${input('client_phone', t('builder.client_phone', 'Client mobile (for SMS reminders, optional)'), 'tel', false, t('builder.client_phone_hint', 'With the country code, e.g. +49 151 23456789'))}
          ${input('due_date', t('intakes.due_date', 'Due date'), 'date')}
          <div>
            <label for="f-chase_schedule">${t('intakes.chase_schedule', 'Reminders')}</label>
            <select id="f-chase_schedule" name="chase_schedule">
              ${['default', 'gentle', 'aggressive', 'off'].map((s) => html`<option value="${s}" ${flag('selected', values.chase_schedule === s)}>${t(`chase.${s}`, s)}</option>`)}
            </select>
          </div>
        </div>
        <label for="f-client_brief">${t('intakes.brief', 'Brief for the client')}</label>
        <textarea id="f-client_brief" name="client_brief" rows="3">${values.client_brief}</textarea>
      </fieldset>
      <h2>${t('intakes.items', 'What to collect')}</h2>
      <div
        id="item-rows"
        data-item-cards
        data-item-legend="${chrome.t('builder.item_n', 'Item {{n}}', { n: '{{n}}' })}"
      >
        ${cards}
      </div>
      ${typePalette(chrome, BUILDER_PATH)} ${cardTemplate(chrome, BUILDER_PATH)}
      <div class="actions builder-actions">
        <button
          type="submit"
          name="intent"
          value="preview"
          class="secondary"
          formaction="/dashboard/intakes/preview"
          formtarget="_blank"
          formnovalidate
        >
          ${t('builder.preview_unsaved', 'Preview as the client (new tab)')}
        </button>
        <button type="submit" name="intent" value="draft" class="secondary">
          ${t('builder.save_draft', 'Save as draft and preview')}
        </button>
        <button type="submit" name="intent" value="send">
          ${t('builder.create_send', 'Create and send to the client')}
        </button>
      </div>
    </form>`;
  return renderPage(chrome, { title: t('intakes.new', 'New intake'), section: 'intakes', body, error });
}
