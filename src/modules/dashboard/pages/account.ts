import type { z } from 'zod';
import { PAID_PLAN_IDS } from '../../../domain/billing.js';
import { PLAN_IDS } from '../../../domain/plans.js';
import { manageBillingForm, planChangeForm } from '../../billing/billing.pages.js';
import { flag, html, raw, type Html } from '../../portal/page/html.js';
import type { Template } from '../../templates/templates.schemas.js';
import type { AuditRow } from '../../audit/audit.repository.js';
import type { ItemFormRow } from '../item-form.js';
import { actionForm, count, csrfField, dataTable, may, moment, renderPage, type Chrome } from '../layout.js';
import { itemRows } from './item-rows.js';

export function templatesPage(
  chrome: Chrome,
  templates: z.infer<typeof Template>[],
  notice: string | null,
): string {
  const { t } = chrome;
  const body = html`<h1>${t('templates.title', 'Templates')}</h1>
    ${
      may(chrome, 'POST', '/dashboard/templates')
        ? html`<div class="actions">
            <a class="button" href="/dashboard/templates/new">${t('templates.new', 'New template')}</a>
          </div>`
        : null
    }
    ${
      templates.length === 0
        ? html`<div class="card">
            ${t('templates.none', 'No templates yet. A template is a list of items to reuse for new intakes.')}
          </div>`
        : dataTable(
            [
              { label: t('templates.name', 'Name') },
              { label: t('templates.items', 'Items') },
              { label: t('templates.created', 'Created'), optional: true },
              { label: t('templates.actions', 'Actions') },
            ],
            templates,
            (tpl) =>
              html`<tr>
                <td><a href="/dashboard/templates/${tpl.id}">${tpl.name}</a></td>
                <td>${tpl.items.map((i) => i.label).join(', ')}</td>
                <td class="optional">${moment(tpl.created_at)}</td>
                <td>
                  ${actionForm(chrome, `/dashboard/templates/${tpl.id}/delete`, t('templates.delete', 'Delete'), { danger: true, confirm: t('templates.delete_confirm', 'Delete the template {{name}}? Intakes made from it keep their items.', { name: tpl.name }) })}
                </td>
              </tr>`,
          )
    }`;
  return renderPage(chrome, { title: t('templates.title', 'Templates'), section: 'templates', body, notice });
}

export function templateFormPage(
  chrome: Chrome,
  target: { id: string | null; name: string; rows: ItemFormRow[] },
  error: string | null,
): string {
  const { t } = chrome;
  const title = target.id ? t('templates.edit', 'Edit template') : t('templates.new', 'New template');
  const body = html`<p><a href="/dashboard/templates">← ${t('templates.title', 'Templates')}</a></p>
    <h1>${title}</h1>
    <form
      method="post"
      action="${target.id ? `/dashboard/templates/${target.id}` : '/dashboard/templates'}"
      class="card"
    >
      ${csrfField(chrome.csrf)}
      <label for="tpl-name">${t('templates.name', 'Name')}</label>
      <input type="text" id="tpl-name" name="name" value="${target.name}" required maxlength="200" />
      ${itemRows(chrome, target.rows)}
      ${may(chrome, 'POST', '/dashboard/templates') ? html`<div class="actions"><button type="submit">${t('templates.save', 'Save template')}</button></div>` : null}
    </form>`;
  return renderPage(chrome, { title, section: 'templates', body, error });
}

export interface Meter {
  label: string;
  used: number;
  limit: number;
  format: (n: number) => string;
}

function meter(chrome: Chrome, m: Meter, id: string): Html {
  const unlimited = !Number.isFinite(m.limit) || m.limit <= 0;
  const text = unlimited
    ? chrome.t('usage.of_unlimited', '{{used}} used', { used: m.format(m.used) })
    : chrome.t('usage.of', '{{used}} of {{limit}}', { used: m.format(m.used), limit: m.format(m.limit) });
  return html`<div class="card">
    <h3 id="${id}">${m.label}</h3>
    ${unlimited ? null : html`<meter min="0" max="${m.limit}" value="${Math.min(m.used, m.limit)}" high="${m.limit * 0.8}" aria-labelledby="${id}">${text}</meter>`}
    <p>${text}</p>
  </div>`;
}

/** Intakes per day as a bar chart in SVG (attributes, not styles: the page's CSP allows no inline style). */
function chart(chrome: Chrome, days: { day: string; count: number }[]): Html {
  const max = Math.max(1, ...days.map((d) => d.count));
  const barWidth = 20;
  const height = 140;
  const plot = height - 24;
  const width = days.length * barWidth;
  // The top band holds the scale's label ("busiest day"), so no bar reaches into it.
  const top = 16;
  const bars = days.map((d, i) => {
    const h = Math.round((d.count / max) * (plot - top));
    return `<rect x="${i * barWidth + 3}" y="${plot - h}" width="${barWidth - 6}" height="${h}"><title>${d.day}: ${d.count}</title></rect>`;
  });
  const first = days[0]?.day.slice(5) ?? '';
  const last = days[days.length - 1]?.day.slice(5) ?? '';
  const labels = `<text x="0" y="${height - 6}">${first}</text><text x="${width}" y="${height - 6}" text-anchor="end">${last}</text><text x="0" y="10">${max}</text><line x1="0" x2="${width}" y1="${top}" y2="${top}" stroke="#d9e2ec" />`;
  const summary = chrome.t(
    'usage.chart_summary',
    '{{total}} intakes in the last 30 days; busiest day {{max}}.',
    {
      total: days.reduce((sum, d) => sum + d.count, 0),
      max,
    },
  );
  return html`<figure class="card chart-card">
    <figcaption>${chrome.t('usage.chart', 'Intakes per day, last 30 days')}</figcaption>
    <svg class="chart" role="img" aria-label="${summary}" viewBox="0 0 ${width} ${height}">
      ${raw(bars.join('') + labels)}
    </svg>
    <p class="muted">${summary}</p>
  </figure>`;
}

/** The billing module's buttons: upgrades to the paid plans above this one, and the subscription's page. */
function billingButtons(chrome: Chrome, planId: string): Html {
  const rank = (PLAN_IDS as readonly string[]).indexOf(planId);
  const upgrades = PAID_PLAN_IDS.filter((id) => PLAN_IDS.indexOf(id) > rank);
  // Billing is the owner's: nobody else sees buttons the server would refuse.
  if (!may(chrome, 'POST', '/dashboard/billing/checkout')) return html``;
  return html`<div class="actions">
    ${upgrades.map((id) => planChangeForm(id, chrome.csrf, '/dashboard/usage'))}
    ${(PAID_PLAN_IDS as readonly string[]).includes(planId) ? manageBillingForm(chrome.csrf, '/dashboard/usage') : null}
  </div>`;
}

export function usagePage(
  chrome: Chrome,
  data: {
    plan: string;
    planId: string;
    period: string;
    meters: Meter[];
    keys: { name: string; used: number }[];
    rateLimit: number;
    days: { day: string; count: number }[];
  },
): string {
  const { t } = chrome;
  const body = html`<h1>${t('usage.title', 'Usage')}</h1>
    <div class="card">
      <p>
        ${t('usage.plan', 'Plan: {{plan}} · period {{period}}', { plan: data.plan, period: data.period })}
      </p>
      ${billingButtons(chrome, data.planId)}
    </div>
    <div class="grid">${data.meters.map((m, i) => meter(chrome, m, `meter-${i}`))}</div>
    <h2>${t('usage.requests', 'API requests this hour')}</h2>
    <p class="muted">
      ${t('usage.rate_hint', 'Each key may make {{limit}} requests per rolling hour.', { limit: count(chrome, data.rateLimit) })}
    </p>
    <div class="grid">
      ${data.keys.map((k, i) => meter(chrome, { label: k.name, used: k.used, limit: data.rateLimit, format: (n) => count(chrome, n) }, `key-${i}`))}
    </div>
    ${chart(chrome, data.days)}`;
  return renderPage(chrome, { title: t('usage.title', 'Usage'), section: 'usage', body });
}

export function auditLogPage(
  chrome: Chrome,
  data: {
    rows: AuditRow[];
    actions: string[];
    action: string;
    actor: string;
    page: number;
    hasMore: boolean;
  },
): string {
  const { t } = chrome;
  const link = (page: number) =>
    `/dashboard/audit?${new URLSearchParams({ ...(data.action ? { action: data.action } : {}), ...(data.actor ? { actor: data.actor } : {}), page: String(page) }).toString()}`;
  // The filters' labels, the columns' headers and, on a phone, the labels of an entry's card.
  const labels = {
    action: t('audit.action', 'Action'),
    resource: t('audit.resource', 'Resource'),
    actor: t('audit.actor', 'Actor'),
    request: t('audit.request', 'Request'),
  };
  const body = html`<h1>${t('audit.title', 'Audit log')}</h1>
    <form method="get" action="/dashboard/audit" class="filters">
      <div>
        <label for="a-action">${labels.action}</label>
        <select id="a-action" name="action">
          <option value="">${t('audit.any', 'Any')}</option>
          ${data.actions.map((a) => html`<option value="${a}" ${flag('selected', data.action === a)}>${a}</option>`)}
        </select>
      </div>
      <div>
        <label for="a-actor">${labels.actor}</label>
        <select id="a-actor" name="actor">
          <option value="">${t('audit.any', 'Any')}</option>
          ${['api_key', 'user', 'client', 'system'].map((a) => html`<option value="${a}" ${flag('selected', data.actor === a)}>${a}</option>`)}
        </select>
      </div>
      <button type="submit" class="secondary">${t('audit.filter', 'Filter')}</button>
    </form>
    ${dataTable(
      [
        { label: t('audit.when', 'When') },
        { label: labels.action },
        { label: labels.resource },
        { label: labels.actor },
        { label: labels.request, optional: true },
      ],
      data.rows,
      (r) =>
        html`<tr>
          <td class="title">${moment(r.created_at)}</td>
          <td data-label="${labels.action}"><code>${r.action}</code></td>
          <td data-label="${labels.resource}">
            ${r.resource_type} ${r.resource_id ? html`<code>${r.resource_id}</code>` : null}
          </td>
          <td data-label="${labels.actor}">${r.actor_type} <code>${r.actor_id ?? ''}</code></td>
          <td class="optional" data-label="${labels.request}">
            <code>${r.request_id ?? ''}</code>
          </td>
        </tr>`,
      { cards: true },
    )}
    ${data.rows.length === 0 ? html`<p class="muted">${t('audit.none', 'No entries.')}</p>` : null}
    <nav class="actions" aria-label="${t('pagination', 'Pages')}">
      ${data.page > 1 ? html`<a href="${link(data.page - 1)}">${t('previous', 'Previous')}</a>` : null}
      ${data.hasMore ? html`<a href="${link(data.page + 1)}">${t('next', 'Next')}</a>` : null}
    </nav>`;
  return renderPage(chrome, { title: t('audit.title', 'Audit log'), section: 'audit', body });
}

export function settingsPage(
  chrome: Chrome,
  data: {
    name: string;
    language: string;
    logoUrl: string | null;
    accent: string | null;
    brandingAllowed: boolean;
    /** The plan that includes custom branding. */
    brandingPlan: string;
    /** The signed-in person's own notification choice (notifications.ts). */
    notifications: Html;
  },
  extra: { notice?: string | null; error?: string | null },
): string {
  const { t } = chrome;
  // A role that may not change settings reads them: the fields are disabled, the save button gone.
  const canSave = may(chrome, 'POST', '/dashboard/settings');
  const body = html`<h1>${t('settings.title', 'Settings')}</h1>
    <form method="post" action="/dashboard/settings" enctype="multipart/form-data" class="card">
      ${csrfField(chrome.csrf)}
      <fieldset class="bare" ${flag('disabled', !canSave)}>
        <h2>${t('settings.account', 'Account')}</h2>
        <label for="s-name">${t('settings.name', 'Account name (shown to clients)')}</label>
        <input type="text" id="s-name" name="name" value="${data.name}" required maxlength="200" />
        <label for="s-lang">${t('settings.language', 'Default language')}</label>
        <select id="s-lang" name="default_language">
          ${[
            ['en', 'English'],
            ['de', 'Deutsch'],
            ['fr', 'Français'],
            ['es', 'Español'],
            ['nl', 'Nederlands'],
          ].map(
            ([v, l]) => html`<option value="${v}" ${flag('selected', data.language === v)}>${l}</option>`,
          )}
        </select>
        <h2>${t('settings.branding', 'Portal branding')}</h2>
        ${data.brandingAllowed ? null : html`<p class="muted">${t('polish.branding_plan', 'Custom branding is part of the {{plan}} plan.', { plan: data.brandingPlan })}</p>`}
        ${data.logoUrl ? html`<p><img class="thumb" src="${data.logoUrl}" alt="${t('settings.current_logo', 'Current logo')}" /></p>` : null}
        <label for="s-logo"
          >${t('settings.logo', 'Logo (PNG, JPEG, WebP, GIF or SVG, at most 140 KB)')}</label
        >
        <input
          type="file"
          id="s-logo"
          name="logo"
          accept="image/png,image/jpeg,image/webp,image/gif,image/svg+xml"
          ${flag('disabled', !data.brandingAllowed)}
        />
        ${data.logoUrl ? html`<label class="inline"><input type="checkbox" name="remove_logo" /> ${t('settings.remove_logo', 'Remove the logo')}</label>` : null}
        <label for="s-accent">${t('settings.accent', 'Accent colour')}</label>
        <input
          type="color"
          id="s-accent"
          name="accent_color"
          value="${data.accent ?? '#0b5cad'}"
          ${flag('disabled', !data.brandingAllowed)}
        />
        <input type="hidden" name="accent_before" value="${data.accent ?? '#0b5cad'}" />
      </fieldset>
      ${
        canSave
          ? html`<div class="actions">
              <button type="submit">${t('settings.save', 'Save settings')}</button>
            </div>`
          : html`<p class="muted">
              ${t('settings.read_only', 'Only an admin of the account can change these settings.')}
            </p>`
      }
    </form>
    ${data.notifications}
    ${
      !may(chrome, 'GET', '/dashboard/members')
        ? null
        : html`<div class="card">
            <h2>${t('settings.users', 'People who can sign in')}</h2>
            <p>
              <a href="/dashboard/members"
                >${t('settings.members_link', 'Members: invite colleagues, choose what each may do')}</a
              >
            </p>
          </div>`
    }`;
  return renderPage(chrome, {
    title: t('settings.title', 'Settings'),
    section: 'settings',
    body,
    notice: extra.notice,
    error: extra.error,
  });
}
