import type { z } from 'zod';
import { INTAKE_STATUSES, type Progress } from '../../../domain/intake-state.js';
import { flag, html, type Html } from '../../portal/page/html.js';
import type { Intake, IntakeStatusObject } from '../../intakes/intakes.schemas.js';
import { actionForm, badge, csrfField, dataTable, renderPage, when, type Chrome } from '../layout.js';
import { portalLink } from './builder-preview.js';

export interface IntakeListRow {
  id: string;
  projectName: string;
  clientEmail: string;
  clientName: string | null;
  status: string;
  createdAt: string;
  progress: Progress;
}

function progressBar(chrome: Chrome, p: Progress): Html {
  const label = chrome.t('intakes.progress', '{{submitted}} of {{total}} items', {
    submitted: p.submitted,
    total: p.total,
  });
  return html`<progress max="100" value="${p.percent}" aria-label="${label}">${p.percent}%</progress>
    <span class="muted">${label}</span>`;
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
        ? html`<div class="card">${t('intakes.none', 'No intakes here yet.')}</div>`
        : dataTable(
            [
              { label: t('intakes.project', 'Project') },
              { label: t('intakes.client', 'Client') },
              { label: t('intakes.status', 'Status') },
              { label: t('intakes.progress_head', 'Progress') },
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
                <td>${badge(r.status, t(`status.${r.status}`, r.status.replace('_', ' ')))}</td>
                <td>${progressBar(chrome, r.progress)}</td>
                <td class="optional">${when(r.createdAt)}</td>
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

export interface ItemView {
  key: string;
  label: string;
  type: string;
  status: string;
  required: boolean;
  owner: boolean;
  revisionNote: string | null;
  submittedAt: string | null;
  approvedAt: string | null;
  value: unknown;
  secret: boolean;
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
}

/** A value as text: scalars as themselves, anything else as JSON. */
function textOf(value: unknown): string {
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean')
    return String(value);
  return JSON.stringify(value) ?? '';
}

function formatBytes(size: number): string {
  if (size < 1024) return `${size} B`;
  if (size < 1024 * 1024) return `${(size / 1024).toFixed(1)} KB`;
  return `${(size / 1024 / 1024).toFixed(1)} MB`;
}

function valueTable(value: Record<string, unknown>): Html {
  return html`<table>
    <tbody>
      ${Object.entries(value).map(
        ([k, v]) =>
          html`<tr>
            <th scope="row">${k}</th>
            <td>${textOf(v)}</td>
          </tr>`,
      )}
    </tbody>
  </table>`;
}

function submission(chrome: Chrome, item: ItemView): Html {
  const { t } = chrome;
  if (item.secret) {
    return html`<p class="muted">
      ${t('detail.secret', 'A secret: never shown here. An API key with secrets:read reveals it once.')}
    </p>`;
  }
  if (item.files.length > 0) {
    return html`<ul>
      ${item.files.map(
        (f) =>
          html`<li>
            ${f.preview ? html`<img class="thumb" src="${f.preview}" alt="${t('detail.preview_of', 'Preview of {{name}}', { name: f.name })}" width="112" height="112" /><br />` : null}
            <a href="${f.url}" download>${f.name}</a>
            <span class="muted">${formatBytes(f.size)}, ${f.contentType}</span>
          </li>`,
      )}
    </ul>`;
  }
  if (item.value === null || item.value === undefined)
    return html`<p class="muted">${t('detail.nothing', 'Nothing yet.')}</p>`;
  if (Array.isArray(item.value))
    return html`<ul>
      ${item.value.map((v) => html`<li>${textOf(v)}</li>`)}
    </ul>`;
  if (typeof item.value === 'object') return valueTable(item.value as Record<string, unknown>);
  return html`<pre>${textOf(item.value)}</pre>`;
}

function itemCard(chrome: Chrome, intakeId: string, item: ItemView): Html {
  const { t } = chrome;
  const base = `/dashboard/intakes/${intakeId}/items/${item.key}`;
  const reviewable = !item.owner && (item.status === 'submitted' || item.status === 'approved');
  return html`<section class="item" aria-labelledby="item-${item.key}" data-item="${item.key}">
    <h3 id="item-${item.key}">
      ${item.label} ${badge(item.status, t(`item_status.${item.status}`, item.status.replace('_', ' ')))}
    </h3>
    <p class="muted">
      ${item.key} ·
      ${item.type}${item.required ? '' : ` · ${t('detail.optional', 'optional')}`}${item.owner ? ` · ${t('detail.owner_item', 'your decision')}` : ''}
      ${item.submittedAt ? html` · ${t('detail.submitted_at', 'submitted {{at}}', { at: when(item.submittedAt) })}` : null}
      ${item.approvedAt ? html` · ${t('detail.approved_at', 'approved {{at}}', { at: when(item.approvedAt) })}` : null}
    </p>
    ${item.revisionNote ? html`<p><strong>${t('detail.revision_note', 'Revision requested:')}</strong> ${item.revisionNote}</p>` : null}
    ${submission(chrome, item)}
    ${
      item.owner
        ? html`<form method="post" action="${base}/decide" class="actions">
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
          </form>`
        : null
    }
    ${
      reviewable
        ? html`<div class="actions">
            ${item.status === 'submitted' ? actionForm(chrome, `${base}/approve`, t('detail.approve', 'Approve')) : null}
            <details>
              <summary>${t('detail.request_revision', 'Request a revision')}</summary>
              <form method="post" action="${base}/revision">
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
          </div>`
        : null
    }
  </section>`;
}

export function intakeDetailPage(
  chrome: Chrome,
  data: {
    intake: z.infer<typeof Intake>;
    status: z.infer<typeof IntakeStatusObject>;
    items: ItemView[];
    events: { id: string; type: string; occurred_at: string }[];
  },
  notice: string | null,
): string {
  const { t } = chrome;
  const { intake, status } = data;
  const base = `/dashboard/intakes/${intake.id}`;
  const open = intake.status !== 'archived' && intake.status !== 'completed' && intake.status !== 'draft';
  const body = html`<p><a href="/dashboard/intakes">← ${t('intakes.title', 'Intakes')}</a></p>
    <h1>${intake.project_name}</h1>
    <div class="card">
      <p>
        ${badge(intake.status, t(`status.${intake.status}`, intake.status.replace('_', ' ')))}
        ${progressBar(chrome, status.progress)}
      </p>
      <p>
        ${t('detail.client', 'Client')}:
        ${intake.client.name ? `${intake.client.name} ` : ''}&lt;${intake.client.email}&gt;${intake.client.phone ? ` · ${intake.client.phone}` : ''}
      </p>
      <p>
        ${t('detail.due', 'Due')}: ${intake.due_date ?? '—'} · ${t('detail.last_seen', 'Client last seen')}:
        ${when(intake.client_last_seen)}
      </p>
      ${intake.status === 'draft' ? null : portalLink(chrome, intake.portal_url)}
      <div class="actions">
        ${intake.status === 'archived' ? null : html`<a class="button secondary" href="${base}/edit">${t('builder.edit', 'Edit')}</a>`}
        <a class="button secondary" href="${base}/preview"
          >${t('builder.preview', 'Preview as the client')}</a
        >
        ${intake.status === 'draft' ? actionForm(chrome, `${base}/send`, t('detail.send', 'Send to client')) : null}
        ${open ? actionForm(chrome, `${base}/chase`, t('detail.chase', 'Send a reminder now'), { secondary: true, fields: { channel: 'email' } }) : null}
        ${open && intake.client.phone ? actionForm(chrome, `${base}/chase`, t('detail.chase_sms', 'Remind by SMS'), { secondary: true, fields: { channel: 'sms' } }) : null}
        ${intake.status !== 'archived' ? actionForm(chrome, `${base}/archive`, t('detail.archive', 'Archive'), { secondary: true, confirm: t('detail.archive_confirm', 'Archive this intake? The portal closes for the client.') }) : null}
        ${actionForm(chrome, `${base}/delete`, t('detail.delete', 'Delete'), { danger: true, confirm: t('detail.delete_confirm', 'Delete this intake and everything the client sent? This cannot be undone.') })}
      </div>
    </div>
    <h2>${t('detail.items', 'Items')}</h2>
    <div class="card">${data.items.map((item) => itemCard(chrome, intake.id, item))}</div>
    <h2>${t('detail.chases', 'Reminders')}</h2>
    ${
      status.chases.length === 0
        ? html`<p class="muted">${t('detail.no_chases', 'No reminders.')}</p>`
        : html`<div class="table-wrap">
            <table>
              <thead>
                <tr>
                  <th scope="col">#</th>
                  <th scope="col">${t('detail.channel', 'Channel')}</th>
                  <th scope="col">${t('detail.status', 'Status')}</th>
                  <th scope="col">${t('detail.when', 'When')}</th>
                  <th scope="col" class="optional">${t('detail.trigger', 'Trigger')}</th>
                </tr>
              </thead>
              <tbody>
                ${status.chases.map(
                  (c) =>
                    html`<tr>
                      <td>${c.attempt_no}</td>
                      <td>${c.channel}</td>
                      <td>${badge(c.status)}</td>
                      <td>${when(c.sent_at ?? c.scheduled_for)}</td>
                      <td class="optional">${c.trigger}</td>
                    </tr>`,
                )}
              </tbody>
            </table>
          </div>`
    }
    <h2>${t('detail.events', 'History')}</h2>
    ${
      data.events.length === 0
        ? html`<p class="muted">${t('detail.no_events', 'No events yet.')}</p>`
        : html`<ol class="card">
            ${data.events.map((e) => html`<li><code>${e.type}</code> <span class="muted">${when(e.occurred_at)}</span></li>`)}
          </ol>`
    }`;
  return renderPage(chrome, { title: intake.project_name, section: 'intakes', body, notice });
}
