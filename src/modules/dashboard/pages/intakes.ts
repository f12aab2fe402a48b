import { INTAKE_STATUSES, type Progress } from '../../../domain/intake-state.js';
import { flag, html, type Html } from '../../portal/page/html.js';
import type { ItemFormRow } from '../item-form.js';
import { badge, csrfField, dataTable, moment, renderPage, type Chrome } from '../layout.js';
import { textOf } from './review.js';
import { itemRows } from './item-rows.js';

export interface IntakeListRow {
  id: string;
  projectName: string;
  clientEmail: string;
  clientName: string | null;
  status: string;
  createdAt: string;
  progress: Progress;
  /** Submitted answers not reviewed yet. */
  awaitingReview: number;
}

export function progressBar(chrome: Chrome, p: Progress): Html {
  const label = chrome.t('intakes.progress', '{{submitted}} of {{total}} items', {
    submitted: p.submitted,
    total: p.total,
  });
  return html`<progress max="100" value="${p.percent}" aria-label="${label}">${p.percent}%</progress>
    <span class="muted">${label}</span>`;
}

/** What to do next when the list is empty: clear the filters, or make a first intake (in test mode first). */
function emptyList(chrome: Chrome, filtered: boolean): Html {
  const { t } = chrome;
  if (filtered) {
    return html`<div class="card empty-state">
      <p>${t('review.empty.filtered', 'No intakes match this search.')}</p>
      <p><a href="/dashboard/intakes">${t('review.empty.clear', 'Show all intakes')}</a></p>
    </div>`;
  }
  return html`<div class="card empty-state">
    <h2>
      ${chrome.livemode ? t('review.empty.live_title', 'No intakes yet') : t('review.empty.test_title', 'No test intakes yet')}
    </h2>
    <ol>
      <li>
        ${t('review.empty.step_create', 'Create an intake: say what you need from the client (files, texts, choices, passwords).')}
      </li>
      <li>
        ${t('review.empty.step_send', 'Send it: the client gets a link to a page where they upload and answer, with reminders until it is done.')}
      </li>
      <li>${t('review.empty.step_review', 'Review here: approve each answer or ask for changes.')}</li>
    </ol>
    <div class="actions">
      <a class="button" href="/dashboard/intakes/new">${t('intakes.new', 'New intake')}</a>
    </div>
    <p class="muted">
      ${
        chrome.livemode
          ? t(
              'review.empty.try_test',
              'To try it first, switch to test data at the top: nothing there reaches real clients.',
            )
          : t(
              'review.empty.test_hint',
              'Test intakes send nothing to real people: their emails and SMS land in the test inbox.',
            )
      }
    </p>
  </div>`;
}

export function intakeListPage(
  chrome: Chrome,
  data: { rows: IntakeListRow[]; total: number; status: string; q: string; page: number; pageSize: number },
  notice: string | null,
): string {
  const { t } = chrome;
  const query = (page: number) =>
    `/dashboard/intakes?${new URLSearchParams({ ...(data.status ? { status: data.status } : {}), ...(data.q ? { q: data.q } : {}), page: String(page) }).toString()}`;
  const pages = Math.max(1, Math.ceil(data.total / data.pageSize));
  const body = html`<h1>${t('intakes.title', 'Intakes')}</h1>
    <div class="actions">
      <a class="button" href="/dashboard/intakes/new">${t('intakes.new', 'New intake')}</a>
    </div>
    <form method="get" action="/dashboard/intakes" class="filters" role="search">
      <div>
        <label for="q">${t('intakes.search', 'Search client or project')}</label>
        <input type="search" id="q" name="q" value="${data.q}" />
      </div>
      <div>
        <label for="status">${t('intakes.status', 'Status')}</label>
        <select id="status" name="status">
          <option value="">${t('intakes.any_status', 'Any status')}</option>
          ${INTAKE_STATUSES.map((s) => html`<option value="${s}" ${flag('selected', data.status === s)}>${t(`status.${s}`, s.replace('_', ' '))}</option>`)}
        </select>
      </div>
      <button type="submit" class="secondary">${t('intakes.filter', 'Filter')}</button>
    </form>
    <p class="muted">${t('intakes.count', '{{count}} intakes', { count: data.total })}</p>
    ${
      data.rows.length === 0
        ? emptyList(chrome, Boolean(data.q || data.status))
        : dataTable(
            [
              { label: t('intakes.project', 'Project') },
              { label: t('intakes.client', 'Client') },
              { label: t('intakes.status', 'Status') },
              { label: t('intakes.progress_head', 'Progress'), optional: true },
              { label: t('intakes.created', 'Created'), optional: true },
            ],
            data.rows,
            (r) =>
              html`<tr>
                <td><a href="/dashboard/intakes/${r.id}">${r.projectName}</a></td>
                <td>
                  ${r.clientName ? html`${r.clientName}<br />` : null}<span class="muted"
                    >${r.clientEmail}</span
                  >
                </td>
                <td>
                  ${badge(r.status, t(`status.${r.status}`, r.status.replace('_', ' ')))}
                  ${r.awaitingReview > 0 ? badge('needs_review', t('review.needs_review', 'needs review ({{count}})', { count: r.awaitingReview })) : null}
                </td>
                <td class="optional">${progressBar(chrome, r.progress)}</td>
                <td class="optional">${moment(r.createdAt)}</td>
              </tr>`,
          )
    }
    ${
      pages > 1
        ? html`<nav class="actions" aria-label="${t('pagination', 'Pages')}">
            ${data.page > 1 ? html`<a href="${query(data.page - 1)}">${t('previous', 'Previous')}</a>` : null}
            <span>${t('page_of', 'Page {{page}} of {{pages}}', { page: data.page, pages })}</span>
            ${data.page < pages ? html`<a href="${query(data.page + 1)}">${t('next', 'Next')}</a>` : null}
          </nav>`
        : null
    }`;
  return renderPage(chrome, { title: t('intakes.title', 'Intakes'), section: 'intakes', body, notice });
}

export interface NewIntakeValues {
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
}

export function newIntakePage(
  chrome: Chrome,
  templates: { id: string; name: string }[],
  values: NewIntakeValues,
  error: string | null,
): string {
  const { t } = chrome;
  const input = (name: keyof NewIntakeValues, label: string, type = 'text', required = false) =>
    html`<label for="f-${name}">${label}</label
      ><input
        type="${type}"
        id="f-${name}"
        name="${name}"
        value="${textOf(values[name])}"
        ${flag('required', required)}
      />`;
  const body = html`<h1>${t('intakes.new', 'New intake')}</h1>
    <form method="post" action="/dashboard/intakes" class="card">
      ${csrfField(chrome.csrf)}
      <fieldset>
        <legend>${t('intakes.project_client', 'Project and client')}</legend>
        ${input('project_name', t('intakes.project', 'Project'), 'text', true)}
        ${input('client_email', t('intakes.client_email', 'Client email'), 'email', true)}
        ${input('client_name', t('intakes.client_name', 'Client name'))}
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
        ${input('client_phone', t('intakes.client_phone', 'Client phone (E.164, for SMS reminders)'), 'tel')}
        ${input('due_date', t('intakes.due_date', 'Due date'), 'date')}
        <label for="f-chase_schedule">${t('intakes.chase_schedule', 'Reminders')}</label>
        <select id="f-chase_schedule" name="chase_schedule">
          ${['default', 'gentle', 'aggressive', 'off'].map((s) => html`<option value="${s}" ${flag('selected', values.chase_schedule === s)}>${t(`chase.${s}`, s)}</option>`)}
        </select>
        <label for="f-client_brief">${t('intakes.brief', 'Brief for the client')}</label>
        <textarea id="f-client_brief" name="client_brief" rows="3">${values.client_brief}</textarea>
        <label class="inline"
          ><input type="checkbox" name="send" ${flag('checked', values.send)} />
          ${t('intakes.send_now', 'Send the portal link to the client now')}</label
        >
      </fieldset>
      <fieldset>
        <legend>${t('intakes.items', 'What to collect')}</legend>
        <label class="inline"
          ><input
            type="radio"
            name="source"
            value="scratch"
            ${flag('checked', values.source === 'scratch')}
          />
          ${t('intakes.from_scratch', 'These items')}</label
        >
        <label class="inline"
          ><input
            type="radio"
            name="source"
            value="template"
            ${flag('checked', values.source === 'template')}${flag('disabled', templates.length === 0)}
          />
          ${t('intakes.from_template', 'A template')}</label
        >
        <label for="f-template_id">${t('intakes.template', 'Template')}</label>
        <select id="f-template_id" name="template_id">
          <option value="">—</option>
          ${templates.map((tpl) => html`<option value="${tpl.id}" ${flag('selected', values.template_id === tpl.id)}>${tpl.name}</option>`)}
        </select>
        ${itemRows(chrome, values.rows)}
      </fieldset>
      <div class="actions"><button type="submit">${t('intakes.create', 'Create intake')}</button></div>
    </form>`;
  return renderPage(chrome, { title: t('intakes.new', 'New intake'), section: 'intakes', body, error });
}
