import type { z } from 'zod';
import { SCOPES } from '../../../domain/scopes.js';
import { flag, html, type Html } from '../../portal/page/html.js';
import type { ApiKey } from '../../keys/keys.schemas.js';
import type { DeliveryAttempt, WebhookEndpoint } from '../../webhooks/webhooks.schemas.js';
import { WEBHOOK_EVENT_NAMES } from '../../webhooks/webhooks.events.js';
import {
  actionForm,
  badge,
  csrfField,
  dataTable,
  moment,
  renderPage,
  tHtml,
  type Chrome,
} from '../layout.js';

/** A secret shown once, with a copy button (the script reveals it; selecting the text works without). */
export function secretOnce(chrome: Chrome, id: string, label: string, secret: string): Html {
  const { t } = chrome;
  return html`<div class="card" role="status">
    <h2>${label}</h2>
    <p>${t('secret.once', 'Copy it now: it is shown only this once.')}</p>
    <p class="secret" id="${id}">${secret}</p>
    <button
      type="button"
      class="secondary"
      data-copy="${id}"
      data-copied="${t('secret.copied', 'Copied')}"
      hidden
    >
      ${t('secret.copy', 'Copy')}
    </button>
  </div>`;
}

export function keysPage(
  chrome: Chrome,
  keys: z.infer<typeof ApiKey>[],
  extra: { created?: { name: string; key: string }; notice?: string | null; error?: string | null },
): string {
  const { t } = chrome;
  const body = html`<h1>${t('keys.title', 'API keys')}</h1>
    ${extra.created ? secretOnce(chrome, 'new-key', t('keys.created', 'New key “{{name}}”', { name: extra.created.name }), extra.created.key) : null}
    <form method="post" action="/dashboard/keys" class="card">
      ${csrfField(chrome.csrf)}
      <h2>${t('keys.create', 'Create a key')}</h2>
      <p class="muted">
        ${chrome.livemode ? t('keys.live_hint', 'Live keys act on real clients.') : t('keys.test_hint', 'Test keys act only on test data.')}
      </p>
      <label for="key-name">${t('keys.name', 'Name')}</label>
      <input type="text" id="key-name" name="name" required maxlength="100" />
      <fieldset>
        <legend>${t('keys.scopes', 'Scopes')}</legend>
        ${SCOPES.map((scope) => html`<label class="inline"><input type="checkbox" name="scopes" value="${scope}" ${flag('checked', scope === 'intakes:read')} /> ${scope}</label>`)}
      </fieldset>
      <button type="submit">${t('keys.create_button', 'Create key')}</button>
    </form>
    <div class="table-wrap" tabindex="0">
      <table>
        <thead>
          <tr>
            <th scope="col">${t('keys.name', 'Name')}</th>
            <th scope="col">${t('keys.prefix', 'Key')}</th>
            <th scope="col" class="optional">${t('keys.scopes', 'Scopes')}</th>
            <th scope="col" class="optional">${t('keys.last_used', 'Last used')}</th>
            <th scope="col"><span class="skip-label">${t('keys.actions', 'Actions')}</span></th>
          </tr>
        </thead>
        <tbody>
          ${keys.map(
            (k) =>
              html`<tr data-key="${k.id}">
                <td>${k.name}</td>
                <td>
                  <code>${k.prefix}…</code>
                  ${badge(k.mode === 'live' ? 'mode-live' : 'mode-test', k.mode === 'live' ? t('mode.live', 'Live mode') : t('mode.test', 'Test mode'))}
                </td>
                <td class="optional">${k.scopes.join(', ')}</td>
                <td class="optional">${moment(k.last_used_at)}</td>
                <td>
                  ${actionForm(chrome, `/dashboard/keys/${k.id}/revoke`, t('keys.revoke', 'Revoke'), { danger: true, confirm: t('keys.revoke_confirm', 'Revoke {{name}}? Programs using it stop working at once.', { name: k.name }) })}
                </td>
              </tr>`,
          )}
        </tbody>
      </table>
    </div>`;
  return renderPage(chrome, {
    title: t('keys.title', 'API keys'),
    section: 'keys',
    body,
    notice: extra.notice,
    error: extra.error,
  });
}

function eventChecklist(chrome: Chrome, chosen: readonly string[]): Html {
  return html`<fieldset>
    <legend>${chrome.t('webhooks.events', 'Events')}</legend>
    ${WEBHOOK_EVENT_NAMES.map((name) => html`<label class="inline"><input type="checkbox" name="events" value="${name}" ${flag('checked', chosen.includes(name))} /> <code>${name}</code></label>`)}
  </fieldset>`;
}

export function webhooksPage(
  chrome: Chrome,
  endpoints: z.infer<typeof WebhookEndpoint>[],
  extra: { created?: { url: string; secret: string }; notice?: string | null; error?: string | null },
): string {
  const { t } = chrome;
  const body = html`<h1>${t('webhooks.title', 'Webhooks')}</h1>
    ${extra.created ? secretOnce(chrome, 'new-secret', t('webhooks.secret_for', 'Signing secret for {{url}}', { url: extra.created.url }), extra.created.secret) : null}
    <form method="post" action="/dashboard/webhooks" class="card">
      ${csrfField(chrome.csrf)}
      <h2>${t('webhooks.add', 'Add an endpoint')}</h2>
      <label for="wh-url">${t('webhooks.url', 'URL')}</label>
      <input type="url" id="wh-url" name="url" required placeholder="https://" />
      <label for="wh-format">${t('webhooks.format', 'Format')}</label>
      <select id="wh-format" name="format">
        <option value="raw">raw (JSON)</option>
        <option value="slack">Slack</option>
        <option value="discord">Discord</option>
      </select>
      ${eventChecklist(chrome, ['intake.completed', 'item.submitted'])}
      <button type="submit">${t('webhooks.add_button', 'Add endpoint')}</button>
    </form>
    ${
      endpoints.length === 0
        ? html`<p class="muted">${t('webhooks.none', 'No endpoints yet.')}</p>`
        : html`<div class="table-wrap" tabindex="0">
            <table>
              <thead>
                <tr>
                  <th scope="col">URL</th>
                  <th scope="col">${t('webhooks.events', 'Events')}</th>
                  <th scope="col">${t('webhooks.status', 'Status')}</th>
                </tr>
              </thead>
              <tbody>
                ${endpoints.map(
                  (e) =>
                    html`<tr>
                      <td><a href="/dashboard/webhooks/${e.id}">${e.url}</a></td>
                      <td>${e.events.join(', ')}</td>
                      <td>${badge(e.status, t(`polish.status.${e.status}`, e.status))}</td>
                    </tr>`,
                )}
              </tbody>
            </table>
          </div>`
    }`;
  return renderPage(chrome, {
    title: t('webhooks.title', 'Webhooks'),
    section: 'webhooks',
    body,
    notice: extra.notice,
    error: extra.error,
  });
}

export function webhookDetailPage(
  chrome: Chrome,
  endpoint: z.infer<typeof WebhookEndpoint>,
  deliveries: z.infer<typeof DeliveryAttempt>[],
  extra: { secret?: string; tested?: z.infer<typeof DeliveryAttempt>; notice?: string | null },
): string {
  const { t } = chrome;
  const base = `/dashboard/webhooks/${endpoint.id}`;
  const body = html`<p><a href="/dashboard/webhooks">← ${t('webhooks.title', 'Webhooks')}</a></p>
    <h1>${endpoint.url}</h1>
    ${extra.secret ? secretOnce(chrome, 'rotated-secret', t('webhooks.new_secret', 'New signing secret'), extra.secret) : null}
    ${extra.tested ? html`<div class="${extra.tested.outcome === 'succeeded' ? 'notice' : 'error'}" role="status">${t('webhooks.tested', 'Test event {{event}}: {{outcome}}', { event: extra.tested.event, outcome: extra.tested.response_status ? `HTTP ${extra.tested.response_status}` : (extra.tested.error ?? extra.tested.outcome) })}</div>` : null}
    <div class="card">
      <p>
        ${badge(endpoint.status, t(`polish.status.${endpoint.status}`, endpoint.status))} · ${endpoint.format}
        · ${tHtml(t, 'webhooks.since', 'since {{at}}', { at: moment(endpoint.created_at) })}
      </p>
      <p>${t('webhooks.events', 'Events')}: ${endpoint.events.map((e) => html`<code>${e}</code> `)}</p>
      <form method="post" action="${base}/test" class="actions">
        ${csrfField(chrome.csrf)}
        <label for="test-event">${t('webhooks.test_event', 'Event')}</label>
        <select id="test-event" name="event">
          ${WEBHOOK_EVENT_NAMES.map((name) => html`<option value="${name}">${name}</option>`)}
        </select>
        <button type="submit">${t('webhooks.send_test', 'Send test event')}</button>
      </form>
      <div class="actions">
        ${actionForm(chrome, `${base}/rotate`, t('webhooks.rotate', 'Rotate secret'), { secondary: true, confirm: t('webhooks.rotate_confirm', 'Make a new secret? The old one keeps signing for 24 hours.') })}
        ${actionForm(chrome, `${base}/delete`, t('webhooks.delete', 'Delete endpoint'), { danger: true, confirm: t('webhooks.delete_confirm', 'Delete this endpoint and its delivery log?') })}
      </div>
    </div>
    <h2>${t('webhooks.log', 'Delivery log')}</h2>
    ${
      deliveries.length === 0
        ? html`<p class="muted">${t('webhooks.no_deliveries', 'Nothing delivered yet.')}</p>`
        : dataTable(
            [
              { label: t('webhooks.when', 'When') },
              { label: t('webhooks.event', 'Event') },
              { label: t('webhooks.status', 'Status') },
              { label: t('webhooks.response', 'Response'), optional: true },
            ],
            deliveries,
            (d) =>
              html`<tr>
                <td class="title">${moment(d.requested_at)}</td>
                <td data-label="${t('webhooks.event', 'Event')}">
                  <code>${d.event}</code
                  >${d.test ? html` <span class="badge">${t('polish.test', 'test')}</span>` : null}
                  #${d.attempt}
                </td>
                <td data-label="${t('webhooks.status', 'Status')}">
                  ${badge(d.outcome, t(`polish.status.${d.outcome}`, d.outcome))}
                  ${d.response_status ? `HTTP ${d.response_status}` : ''}
                  <span class="muted">${d.duration_ms} ms</span
                  >${d.error ? html`<br /><span class="muted">${d.error}</span>` : null}
                </td>
                <td class="optional" data-label="${t('webhooks.response', 'Response')}">
                  ${d.response_excerpt ? html`<pre>${d.response_excerpt.slice(0, 500)}</pre>` : '—'}
                </td>
              </tr>`,
            { cards: true },
          )
    }`;
  return renderPage(chrome, { title: endpoint.url, section: 'webhooks', body, notice: extra.notice });
}

export interface InboxMessage {
  id: string;
  channel: string;
  to: string;
  subject: string | null;
  text: string;
  hasHtml: boolean;
  intakeId: string | null;
  status: string;
  createdAt: string;
}

export function inboxPage(chrome: Chrome, messages: InboxMessage[], liveSmtp: boolean): string {
  const { t } = chrome;
  const body = html`<h1>${t('inbox.title', 'Test inbox')}</h1>
    <p class="muted">
      ${
        chrome.livemode
          ? liveSmtp
            ? t(
                'inbox.live_smtp',
                'Live email goes out through SMTP, so nothing is kept here. Switch to test data to see test messages.',
              )
            : t(
                'inbox.live_outbox',
                'No SMTP server is configured: live email lands here instead of being sent.',
              )
          : t('inbox.test', 'Every email and SMS of test mode. Nothing here reached a real person.')
      }
      ${messages.some((m) => m.hasHtml) ? t('polish.inbox_links', 'Links in a test email open in a new tab.') : null}
    </p>
    ${
      messages.length === 0
        ? html`<div class="card">${t('inbox.empty', 'No messages.')}</div>`
        : messages.map(
            (m) => html`<article class="card" aria-labelledby="msg-${m.id}">
  <h2 id="msg-${m.id}">${m.channel === 'sms' ? 'SMS' : (m.subject ?? '(no subject)')}</h2>
  <p class="muted">${t('inbox.to', 'To')} ${m.to} · ${moment(m.createdAt)} · ${badge(m.status, t(`polish.status.${m.status}`, m.status))}${m.intakeId ? html` · <a href="/dashboard/intakes/${m.intakeId}">${t('inbox.intake', 'intake')}</a>` : null}</p>
  ${m.hasHtml ? html`<iframe class="mail-frame" title="${m.subject ?? ''}" src="/dashboard/inbox/${m.id}/html" sandbox="allow-popups allow-popups-to-escape-sandbox" width="100%" height="560"></iframe>` : null}
  <details${flag('open', !m.hasHtml)}><summary>${t('inbox.text', 'Plain text')}</summary><pre>${m.text}</pre></details>
</article>`,
          )
    }`;
  return renderPage(chrome, { title: t('inbox.title', 'Test inbox'), section: 'inbox', body });
}
