import { enhanceValueForm, flushAll, hasUnsavedTyping } from './autosave.js';
import {
  applyCard,
  applySummary,
  postForm,
  setEnhancer,
  setSendEnhancer,
  unsentCount,
  withBusy,
} from './cards.js';
import { apiPath, t } from './messages.js';
import { enhanceUploadForm } from './uploads.js';

/**
 * The portal page works without this script (plain forms that post and redirect). With it: autosave,
 * character counts, resumable uploads with progress, and cards updated in place.
 */
document.documentElement.classList.add('js');

// The client's time zone keeps reminders out of their night (a zone set by the sender wins on the server).
const timezone = Intl.DateTimeFormat().resolvedOptions().timeZone;
if (timezone) {
  void fetch(apiPath('timezone'), {
    method: 'PUT',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ timezone }),
  }).catch(() => undefined);
}

function enhanceColours(form: HTMLFormElement): void {
  const box = form.querySelector<HTMLElement>('.colours');
  if (!box) return;
  const max = Number(box.dataset.max ?? 12);
  const pair = (row: HTMLElement) => {
    const text = row.querySelector<HTMLInputElement>('input[type="text"]');
    if (!text || row.querySelector('input[type="color"]')) return;
    const picker = document.createElement('input');
    picker.type = 'color';
    picker.tabIndex = -1;
    picker.setAttribute('aria-hidden', 'true');
    const hex = (v: string) =>
      /^#?[0-9a-f]{6}$/i.test(v)
        ? `#${v.replace('#', '')}`
        : /^#?[0-9a-f]{3}$/i.test(v)
          ? `#${v.replace('#', '').replace(/./g, '$&$&')}`
          : '#ffffff';
    picker.value = hex(text.value);
    picker.addEventListener('input', () => {
      text.value = picker.value;
      text.dispatchEvent(new Event('input', { bubbles: true }));
    });
    picker.addEventListener('change', () => text.dispatchEvent(new Event('change', { bubbles: true })));
    text.addEventListener('input', () => (picker.value = hex(text.value.trim())));
    text.before(picker);
  };
  box.querySelectorAll<HTMLElement>('.colour-row').forEach(pair);
  const add = document.createElement('button');
  add.type = 'button';
  add.className = 'secondary';
  add.textContent = t('js.add_colour');
  const refresh = () => (add.hidden = box.querySelectorAll('.colour-row').length >= max);
  add.addEventListener('click', () => {
    const rows = box.querySelectorAll<HTMLElement>('.colour-row');
    const last = rows[rows.length - 1];
    if (!last) return;
    const row = last.cloneNode(true) as HTMLElement;
    const n = rows.length;
    row.querySelector('input[type="color"]')?.remove();
    const input = row.querySelector<HTMLInputElement>('input[type="text"]');
    const label = row.querySelector('label');
    if (input && label) {
      input.id = input.id.replace(/-\d+$/, `-${n}`);
      input.value = '';
      label.htmlFor = input.id;
      label.textContent = label.textContent?.replace(/\d+/, String(n + 1)) ?? '';
    }
    last.after(row);
    pair(row);
    input?.focus();
    refresh();
  });
  box.after(add);
  refresh();
}

function enhanceSecret(form: HTMLFormElement): void {
  const input = form.querySelector<HTMLInputElement>('input[type="password"]');
  const toggle = form.querySelector<HTMLButtonElement>('.reveal');
  if (!input || !toggle) return;
  toggle.hidden = false;
  toggle.addEventListener('click', () => {
    const show = input.type === 'password';
    input.type = show ? 'text' : 'password';
    toggle.textContent = show ? t('secret.hide') : t('secret.show');
    toggle.setAttribute('aria-pressed', String(show));
  });
}

function localTimes(root: HTMLElement): void {
  const format = new Intl.DateTimeFormat(document.documentElement.lang || 'en', {
    dateStyle: 'medium',
    timeStyle: 'short',
  });
  root.querySelectorAll<HTMLTimeElement>('time[data-local]').forEach((time) => {
    const at = Date.parse(time.dateTime);
    if (!Number.isNaN(at)) time.textContent = format.format(new Date(at));
  });
}

function enhanceCard(card: HTMLElement): void {
  const key = card.dataset.key ?? '';
  localTimes(card);
  const valueForm = card.querySelector<HTMLFormElement>('form.item-form');
  if (valueForm) {
    enhanceColours(valueForm);
    enhanceSecret(valueForm);
    enhanceValueForm(valueForm);
  }
  const uploadForm = card.querySelector<HTMLFormElement>('form.upload-form');
  if (uploadForm) enhanceUploadForm(uploadForm);
  const submitForm = card.querySelector<HTMLFormElement>('form.submit-form');
  submitForm?.addEventListener('submit', (event) => {
    event.preventDefault();
    const button = submitForm.querySelector<HTMLButtonElement>('button[type="submit"]');
    void withBusy(button, t('js.submitting'), () => postForm(submitForm, key, { action: 'submit' }));
  });
  card.querySelectorAll<HTMLFormElement>('form.remove-form').forEach((form) => {
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      const button = form.querySelector<HTMLButtonElement>('button');
      void withBusy(button, t('js.removing'), () => postForm(form, key));
    });
  });
}

interface SendAnswer {
  ok: boolean;
  cards: Record<string, string>;
  summary: string;
  send: string;
}

/**
 * The page's one send: whatever is still being typed is saved first, then every saved answer goes
 * in one request; the cards it touched, the summary and the send bar come back rendered.
 */
function enhanceSendBar(bar: HTMLElement): void {
  const form = bar.querySelector<HTMLFormElement>('form.send-form');
  form?.addEventListener('submit', (event) => {
    event.preventDefault();
    const button = form.querySelector<HTMLButtonElement>('button[type="submit"]');
    void withBusy(button, t('js.sending'), async () => {
      await flushAll();
      let response: Response;
      try {
        response = await fetch(form.getAttribute('action') ?? '', {
          method: 'POST',
          headers: { Accept: 'application/json', 'Content-Type': 'application/x-www-form-urlencoded' },
          body: '',
        });
      } catch {
        showSendError(bar, t('js.network'));
        return;
      }
      if (!response.ok) {
        showSendError(bar, t(response.status === 429 ? 'js.rate_limited' : 'js.invalid'));
        return;
      }
      const answer = (await response.json()) as SendAnswer;
      for (const [key, markup] of Object.entries(answer.cards)) applyCard(key, markup);
      applySummary(answer);
      const firstError = Object.keys(answer.cards).find(
        (key) => document.getElementById(`item-${key}-error`)?.hidden === false,
      );
      const target = firstError
        ? document.getElementById(`item-${firstError}-title`)
        : document.getElementById('sent');
      target?.scrollIntoView({ block: 'center' });
      target?.focus();
    });
  });
}

function showSendError(bar: HTMLElement, message: string): void {
  let line = bar.querySelector<HTMLElement>('.form-error');
  if (!line) {
    line = document.createElement('p');
    line.className = 'form-error';
    line.setAttribute('role', 'alert');
    bar.querySelector('form')?.prepend(line);
  }
  line.textContent = message;
}

setEnhancer(enhanceCard);
setSendEnhancer(enhanceSendBar);
document.querySelectorAll<HTMLElement>('.card').forEach(enhanceCard);
const sendBar = document.getElementById('send');
if (sendBar) enhanceSendBar(sendBar);

// Leaving with answers that never reached the agency: the browser asks first.
window.addEventListener('beforeunload', (event) => {
  if (unsentCount() === 0 && !hasUnsavedTyping()) return;
  event.preventDefault();
  // Older browsers show the prompt only when returnValue is set.
  event.returnValue = '';
});
