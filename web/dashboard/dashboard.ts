import { setUpBuilder } from './builder.js';

/**
 * The dashboard's only script, and every page works without it: copy buttons (secrets shown once,
 * portal links), confirmation before destructive forms, the intake builder's cards, times in the
 * viewer's own zone, and review in place (approve, ask for changes, reveal) without a reload.
 */

function setUpCopyButtons(root: ParentNode = document): void {
  for (const button of root.querySelectorAll<HTMLButtonElement>('button[data-copy]')) {
    button.hidden = false;
    button.addEventListener('click', () => {
      const target = document.getElementById(button.dataset.copy ?? '');
      const text = target?.textContent?.trim() ?? '';
      void navigator.clipboard.writeText(text).then(() => {
        button.textContent = button.dataset.copied ?? 'Copied';
      });
    });
  }
}

function setUpConfirmations(): void {
  // Delegated and in the capture phase: it runs before the in-place handler, also for swapped-in forms.
  document.addEventListener(
    'submit',
    (event) => {
      const form = event.target;
      if (!(form instanceof HTMLFormElement) || form.dataset.confirm === undefined) return;
      if (!window.confirm(form.dataset.confirm || 'Are you sure?')) {
        event.preventDefault();
        event.stopImmediatePropagation();
      }
    },
    true,
  );
}

/**
 * Every <time datetime> in the viewer's time zone and language ("25 Nov 2026, 20:06"). The server
 * writes UTC and says so; this only rewrites what it can read.
 */
function localiseTimes(root: ParentNode): void {
  // The page's language, in the viewer's own variant of it when they share one (en-GB: 26 Nov, 14:05).
  const lang = document.documentElement.lang;
  const locale = lang && !navigator.language.startsWith(lang) ? lang : navigator.language;
  const format = new Intl.DateTimeFormat(locale, {
    dateStyle: 'medium',
    timeStyle: 'short',
  });
  const zone = format.resolvedOptions().timeZone;
  for (const element of root.querySelectorAll<HTMLTimeElement>('time[datetime]')) {
    const at = Date.parse(element.dateTime);
    if (Number.isNaN(at) || element.dateTime.length <= 10) continue;
    element.textContent = format.format(at);
    element.title = zone;
  }
}

function formBody(form: HTMLFormElement): URLSearchParams {
  const body = new URLSearchParams();
  for (const [name, value] of new FormData(form)) {
    if (typeof value === 'string') body.append(name, value);
  }
  return body;
}

/**
 * Review in place: a form marked data-inplace is posted with fetch, and the answer (the intake's page
 * after the redirect, or the page with a revealed secret) gives the item's new card and the page's
 * parts marked data-refresh (review summary, progress, history), swapped in without a reload.
 */
function setUpInPlaceForms(): void {
  document.addEventListener('submit', (event) => {
    const form = event.target;
    if (!(form instanceof HTMLFormElement) || form.dataset.inplace === undefined) return;
    const card = form.closest<HTMLElement>('section[data-item]');
    if (!card) return;
    event.preventDefault();
    for (const button of form.querySelectorAll('button')) button.disabled = true;
    void send(form, card);
  });
}

async function send(form: HTMLFormElement, card: HTMLElement): Promise<void> {
  try {
    const response = await fetch(form.action, {
      method: 'POST',
      body: formBody(form),
      credentials: 'same-origin',
      headers: { Accept: 'text/html' },
    });
    const page = new DOMParser().parseFromString(await response.text(), 'text/html');
    const fresh = page.getElementById(card.id);
    if (!response.ok || !fresh) {
      const message = page.querySelector('main p')?.textContent ?? response.statusText;
      showError(card, message);
      return;
    }
    for (const part of document.querySelectorAll<HTMLElement>('[data-refresh]')) {
      const replacement = page.getElementById(part.id);
      if (replacement) part.replaceWith(document.importNode(replacement, true));
    }
    const imported = document.importNode(fresh, true);
    card.replaceWith(imported);
    localiseTimes(document);
    setUpCopyButtons(imported);
    (
      imported.querySelector<HTMLElement>('.notice, .secret-shown') ??
      imported.querySelector<HTMLElement>('.item-title')
    )?.focus();
  } catch {
    showError(card, 'The request failed. Check your connection and try again.');
  } finally {
    for (const button of form.querySelectorAll('button')) button.disabled = false;
  }
}

function showError(card: HTMLElement, message: string): void {
  card.querySelector('.error')?.remove();
  const box = document.createElement('div');
  box.className = 'error';
  box.setAttribute('role', 'alert');
  box.textContent = message;
  card.querySelector('h3')?.after(box);
}

setUpCopyButtons();
setUpConfirmations();
setUpBuilder();
setUpInPlaceForms();
localiseTimes(document);
