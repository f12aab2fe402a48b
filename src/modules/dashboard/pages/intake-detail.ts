import type { z } from 'zod';
import { sectionGroups } from '../../../domain/conditions.js';
import { html, type Html } from '../../portal/page/html.js';
import { formatDate } from '../../portal/page/format.js';
import type { Intake, IntakeStatusObject } from '../../intakes/intakes.schemas.js';
import { nationalPhone } from '../answer-view.js';
import { actionForm, badge, count, dataTable, may, moment, renderPage, type Chrome } from '../layout.js';
import { progressBar } from './intakes.js';
import { portalLink } from './builder-preview.js';
import {
  historyList,
  itemCard,
  reviewSummary,
  type CardNote,
  type HistoryEntry,
  type ItemView,
} from './review.js';

/**
 * The items in their sections, as the client's page groups them: a heading and "n of m done" over the
 * section's items the client answers now (decisions and items not needed now are not counted). Items
 * before the first section, or in a request without sections, sit in one card.
 */
function itemGroups(
  chrome: Chrome,
  intakeId: string,
  items: readonly ItemView[],
  acted: ({ key: string } & CardNote) | undefined,
): Html {
  const { t } = chrome;
  const card = (item: ItemView, level: 3 | 4) =>
    itemCard(chrome, intakeId, item, acted?.key === item.key ? acted : {}, level);
  return html`${sectionGroups(items).map((group, index) => {
    if (group.section === null) {
      return html`<div class="card">${group.items.map((item) => card(item, 3))}</div>`;
    }
    const counted = group.items.filter((item) => !item.owner && item.notNeeded === null);
    const done = counted.filter((item) => item.status === 'submitted' || item.status === 'approved');
    return html`<section class="card item-section" aria-labelledby="section-${index}">
      <div class="section-head">
        <h3 id="section-${index}">${group.section}</h3>
        ${
          counted.length > 0
            ? html`<span class="muted section-progress" id="section-${index}-progress" data-refresh
                >${t('items.section_progress', '{{done}} of {{total}} done', {
                  done: count(chrome, done.length),
                  total: count(chrome, counted.length),
                })}</span
              >`
            : null
        }
      </div>
      ${group.items.map((item) => card(item, 4))}
    </section>`;
  })}`;
}

/** An intake's page: its client and actions, what waits for review, each item's card, reminders, history. */
export function intakeDetailPage(
  chrome: Chrome,
  data: {
    intake: z.infer<typeof Intake>;
    status: z.infer<typeof IntakeStatusObject>;
    items: ItemView[];
    history: HistoryEntry[];
    /** The item an action just changed, and what to say on its card. */
    acted?: { key: string } & CardNote;
  },
  notice: string | null,
): string {
  const { t } = chrome;
  const { intake, status } = data;
  const base = `/dashboard/intakes/${intake.id}`;
  const open = intake.status !== 'archived' && intake.status !== 'completed' && intake.status !== 'draft';
  const reviewOpen = intake.status !== 'archived' && intake.status !== 'draft';
  const client = [intake.client.name, intake.client.email].filter(Boolean).join(' · ');
  const body = html`<p><a href="/dashboard/intakes">← ${t('intakes.title', 'Intakes')}</a></p>
    <h1>${intake.project_name}</h1>
    <div class="card">
      <p id="intake-progress" data-refresh>
        ${badge(intake.status, t(`status.${intake.status}`, intake.status.replace('_', ' ')))}
        ${status.progress.awaiting_review > 0 ? badge('needs_review', t('review.needs_review', 'needs review ({{count}})', { count: status.progress.awaiting_review })) : null}
        ${progressBar(chrome, status.progress)}
      </p>
      <p>
        ${t('detail.client', 'Client')}:
        ${client}${intake.client.phone ? html` · <a href="tel:${intake.client.phone}">${nationalPhone(intake.client.phone)}</a>` : null}
      </p>
      <p>
        ${t('detail.due', 'Due')}: ${intake.due_date ? formatDate(chrome.lang, intake.due_date) : '—'} ·
        ${t('detail.last_seen', 'Client last seen')}: ${moment(intake.client_last_seen)}
      </p>
      ${intake.status === 'draft' ? null : portalLink(chrome, intake.portal_url)}
      <div class="actions">
        ${intake.status === 'archived' || !may(chrome, 'POST', `${base}/edit`) ? null : html`<a class="button secondary" href="${base}/edit">${t('builder.edit', 'Edit')}</a>`}
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
    ${reviewSummary(chrome, intake.id, status.progress.awaiting_review, reviewOpen)}
    <h2>${t('detail.items', 'Items')}</h2>
    ${itemGroups(chrome, intake.id, data.items, data.acted)}
    <h2>${t('detail.chases', 'Reminders')}</h2>
    ${
      status.chases.length === 0
        ? html`<p class="muted">${t('detail.no_chases', 'No reminders.')}</p>`
        : dataTable(
            [
              { label: '#' },
              { label: t('detail.channel', 'Channel') },
              { label: t('detail.status', 'Status') },
              { label: t('detail.when', 'When') },
              { label: t('detail.trigger', 'Trigger'), optional: true },
            ],
            status.chases,
            (c) =>
              html`<tr>
                <td>${c.attempt_no}</td>
                <td>${c.channel === 'sms' ? 'SMS' : t('review.email', 'Email')}</td>
                <td>${badge(c.status, t(`review.chase_status.${c.status}`, c.status))}</td>
                <td>${moment(c.sent_at ?? c.scheduled_for)}</td>
                <td class="optional">${t(`review.trigger.${c.trigger}`, c.trigger)}</td>
              </tr>`,
          )
    }
    <h2>${t('detail.events', 'History')}</h2>
    ${historyList(chrome, data.history)}`;
  return renderPage(chrome, { title: intake.project_name, section: 'intakes', body, notice });
}
