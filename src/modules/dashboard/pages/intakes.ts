import { INTAKE_STATUSES, type Progress } from '../../../domain/intake-state.js';
import { flag, html, type Html } from '../../portal/page/html.js';
import { badge, dataTable, may, moment, renderPage, type Chrome } from '../layout.js';

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
    count: p.total,
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
    ${
      may(chrome, 'POST', '/dashboard/intakes')
        ? html`<div class="actions">
            <a class="button" href="/dashboard/intakes/new">${t('intakes.new', 'New intake')}</a>
          </div>`
        : null
    }
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
  // A viewer may not create (the server refuses it); the button is hidden as a courtesy.
  const mayCreate = may(chrome, 'POST', '/dashboard/intakes');
  const body = html`<h1>${t('intakes.title', 'Intakes')}</h1>
    ${
      mayCreate
        ? html`<div class="actions">
            <a class="button" href="/dashboard/intakes/new">${t('intakes.new', 'New intake')}</a>
          </div>`
        : null
    }
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
                <td class="title"><a href="/dashboard/intakes/${r.id}">${r.projectName}</a></td>
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
                <td class="optional" data-label="${t('intakes.created', 'Created')}">
                  ${moment(r.createdAt)}
                </td>
              </tr>`,
            { cards: true },
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
