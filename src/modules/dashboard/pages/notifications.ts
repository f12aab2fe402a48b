import { NOTICE_FREQUENCIES, DIGEST_HOUR, type NoticeFrequency } from '../../../domain/owner-notices.js';
import { flag, html, type Html } from '../../portal/page/html.js';
import { csrfField, type Chrome } from '../layout.js';

/** The time zones a daily summary can follow: what this runtime knows. */
const TIME_ZONES = Intl.supportedValuesOf('timeZone');

/**
 * The settings page's "Notifications" block: how the signed-in person hears of their clients' answers
 * and trouble. Its own form, so it saves apart from the account's settings.
 */
export function notificationsBlock(
  chrome: Chrome,
  setting: { frequency: NoticeFrequency; timeZone: string | null },
): Html {
  const { t } = chrome;
  const choices: Record<NoticeFrequency, { label: string; hint: string }> = {
    each: {
      label: t('notifications.each', 'Each time'),
      hint: t('notifications.each_hint', 'One email per sending, about a minute after the client sends.'),
    },
    daily: {
      label: t('notifications.daily', 'Daily summary'),
      hint: t('notifications.daily_hint', 'One email a day at {{hour}}:00 with the day’s news.', {
        hour: String(DIGEST_HOUR).padStart(2, '0'),
      }),
    },
    off: {
      label: t('notifications.off', 'Off'),
      hint: t('notifications.off_hint', 'No emails; the dashboard still shows everything.'),
    },
  };
  return html`<form method="post" action="/dashboard/settings/notifications" class="card" id="notifications">
    ${csrfField(chrome.csrf)}
    <h2>${t('notifications.title', 'Notifications')}</h2>
    <p class="muted">
      ${t(
        'notifications.intro',
        'Emails to you ({{email}}) when a client sends answers, when a request is ready for review or complete, and when an email to a client bounces or a request stalls or is overdue.',
        { email: chrome.email },
      )}
    </p>
    <fieldset>
      <legend>${t('notifications.frequency', 'Email me')}</legend>
      ${NOTICE_FREQUENCIES.map(
        (value) =>
          html`<div class="choice">
            <label class="inline">
              <input
                type="radio"
                name="frequency"
                value="${value}"
                aria-describedby="n-${value}-hint"
                ${flag('checked', setting.frequency === value)}
              />
              ${choices[value].label}
            </label>
            <p class="muted" id="n-${value}-hint">${choices[value].hint}</p>
          </div>`,
      )}
    </fieldset>
    <label for="n-zone">${t('notifications.time_zone', 'Time zone of the daily summary')}</label>
    <select id="n-zone" name="time_zone">
      <option value="" ${flag('selected', setting.timeZone === null)}>UTC</option>
      ${TIME_ZONES.filter((zone) => zone !== 'UTC').map(
        (zone) =>
          html`<option value="${zone}" ${flag('selected', setting.timeZone === zone)}>${zone}</option>`,
      )}
    </select>
    <div class="actions"><button type="submit">${t('notifications.save', 'Save notifications')}</button></div>
  </form>`;
}
