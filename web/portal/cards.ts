import { errorText, portalPath, t } from './messages.js';

/**
 * Cards are rendered by the server only: after an action the script fetches the card's new HTML
 * (and the progress summary) and swaps it in, so the page with and without script look the same.
 */
type Enhancer = (card: HTMLElement) => void;
let enhance: Enhancer = () => undefined;

export function setEnhancer(fn: Enhancer): void {
  enhance = fn;
}

interface CardAnswer {
  card: string | null;
  summary: string;
  /** The send bar (the page's one send), re-rendered with the count of unsent answers. */
  send?: string;
  ok?: boolean;
  message?: string | null;
}

function fragment(markup: string): HTMLElement | null {
  const template = document.createElement('template');
  template.innerHTML = markup.trim();
  const node = template.content.firstElementChild;
  return node instanceof HTMLElement ? node : null;
}

/** Counts summary updates, so that a slower, older answer never overwrites a newer one. */
let summaryVersion = 0;

/** Swaps in the progress summary and the send bar. */
export function applySummary(answer: { summary: string; send?: string }): void {
  summaryVersion++;
  const summary = document.getElementById('summary');
  const freshSummary = fragment(answer.summary);
  if (summary && freshSummary) summary.replaceWith(freshSummary);
  const send = document.getElementById('send');
  const freshSend = answer.send ? fragment(answer.send) : null;
  if (send && freshSend) {
    send.replaceWith(freshSend);
    enhanceSend(freshSend);
  }
}

type SendEnhancer = (bar: HTMLElement) => void;
let enhanceSend: SendEnhancer = () => undefined;

export function setSendEnhancer(fn: SendEnhancer): void {
  enhanceSend = fn;
}

/** How many saved answers wait to be sent, as the server last said. */
export function unsentCount(): number {
  return Number(document.getElementById('send')?.dataset.unsent ?? 0);
}

/**
 * After an autosave: the summary, the send bar and the card's status badge follow, while the card's
 * fields (where the client is typing) stay as they are.
 */
export async function refreshStatus(key: string): Promise<void> {
  const asked = summaryVersion;
  const response = await fetch(portalPath('partials', key), { headers: { Accept: 'application/json' } });
  if (!response.ok) return;
  const answer = (await response.json()) as CardAnswer;
  if (asked !== summaryVersion) return;
  applySummary(answer);
  const tags = document.getElementById(`item-${key}`)?.querySelector('.tags');
  const freshTags = answer.card ? fragment(answer.card)?.querySelector('.tags') : null;
  if (tags && freshTags) tags.replaceWith(freshTags);
}

/** Replaces a card with the server's rendering of it. */
export function applyCard(key: string, markup: string): HTMLElement | null {
  const card = document.getElementById(`item-${key}`);
  const fresh = fragment(markup);
  if (!card || !fresh) return null;
  card.replaceWith(fresh);
  enhance(fresh);
  return fresh;
}

export function applyAnswer(key: string, answer: CardAnswer, focus: boolean): HTMLElement | null {
  applySummary(answer);
  const card = document.getElementById(`item-${key}`);
  const fresh = answer.card ? fragment(answer.card) : null;
  if (!card || !fresh) return null;
  card.replaceWith(fresh);
  enhance(fresh);
  if (focus) {
    const target =
      fresh.querySelector<HTMLElement>('[aria-invalid="true"]') ??
      fresh.querySelector<HTMLElement>('.item-title');
    target?.focus();
  }
  return fresh;
}

/** Re-renders one card from the server (after uploads finish). */
export async function refreshCard(key: string): Promise<void> {
  const response = await fetch(portalPath('partials', key), { headers: { Accept: 'application/json' } });
  if (response.ok) applyAnswer(key, (await response.json()) as CardAnswer, false);
}

/** Posts a card's form as the no-script page would, and shows the answer in place. */
export async function postForm(
  form: HTMLFormElement,
  key: string,
  extra: Record<string, string> = {},
): Promise<boolean> {
  const body = new URLSearchParams();
  for (const [name, value] of new FormData(form)) if (typeof value === 'string') body.append(name, value);
  for (const [name, value] of Object.entries(extra)) body.set(name, value);
  let response: Response;
  try {
    response = await fetch(form.getAttribute('action') ?? '', {
      method: 'POST',
      headers: { Accept: 'application/json', 'Content-Type': 'application/x-www-form-urlencoded' },
      body,
    });
  } catch {
    showFormError(form, t('js.network'));
    return false;
  }
  if (response.status === 429) {
    showFormError(form, t('js.rate_limited'));
    return false;
  }
  let answer: (CardAnswer & { error?: string }) | undefined;
  try {
    answer = (await response.clone().json()) as CardAnswer & { error?: string };
  } catch {
    answer = undefined;
  }
  if (!answer?.card) {
    showFormError(form, answer ? await errorText(response) : t('js.invalid'));
    return false;
  }
  applyAnswer(key, answer, true);
  return response.ok;
}

export function showFormError(form: HTMLElement, message: string): void {
  const card = form.closest('.card');
  const target = card?.querySelector<HTMLElement>('.form-error');
  if (!target) return;
  target.textContent = message;
  target.hidden = message === '';
}

/** Busy state on a button while its request runs. */
export async function withBusy<T>(
  button: HTMLButtonElement | null,
  label: string,
  work: () => Promise<T>,
): Promise<T> {
  const before = button?.textContent ?? '';
  if (button) {
    button.disabled = true;
    button.textContent = label;
  }
  try {
    return await work();
  } finally {
    if (button?.isConnected) {
      button.disabled = false;
      button.textContent = before;
    }
  }
}
