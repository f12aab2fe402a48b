import { postForm, refreshStatus, showFormError, withBusy } from './cards.js';
import { apiPath, data, formatTime, t } from './messages.js';
import { charParams, fieldMessage, setFieldError, validateForm } from './validate.js';

/**
 * Value items: a debounced PUT while typing (autosave) and a copy of the form in localStorage until
 * the server has it, so a reload or a lost connection loses nothing typed. Secrets are never copied
 * to the device. Submit posts the card's form and shows the server's answer in place.
 */
const TYPING_DELAY_MS = 1200;
const MAX_WAIT_MS = 8000;
const RETRY_MS = 15000;

type Entries = [string, string][];
interface Backup {
  entries: Entries;
  at: number;
}

const pendingFlushes = new Set<() => Promise<void>>();
window.addEventListener('online', () => pendingFlushes.forEach((flush) => void flush()));

/** Every value form on the page: whether it has typing the server does not have yet, and how to save it. */
const forms = new Map<HTMLFormElement, { dirty: () => boolean; flush: () => Promise<void> }>();

/** Saves whatever was typed and not saved yet, in every card (before the page's one send). */
export async function flushAll(): Promise<void> {
  await Promise.all(Array.from(forms.values(), (form) => form.flush()));
}

/** Whether any card holds typing the server does not have yet. */
export function hasUnsavedTyping(): boolean {
  for (const [form, state] of forms) {
    if (!form.isConnected) forms.delete(form);
    else if (state.dirty()) return true;
  }
  return false;
}

function entriesOf(form: HTMLFormElement): Entries {
  const out: Entries = [];
  for (const [name, value] of new FormData(form))
    if (name !== 'action' && typeof value === 'string') out.push([name, value]);
  return out;
}

function restore(form: HTMLFormElement, entries: Entries): void {
  const byName = new Map<string, string[]>();
  for (const [name, value] of entries) byName.set(name, [...(byName.get(name) ?? []), value]);
  const textIndex = new Map<string, number>();
  for (const element of Array.from(form.elements)) {
    if (!(
      element instanceof HTMLInputElement ||
      element instanceof HTMLTextAreaElement ||
      element instanceof HTMLSelectElement
    ))
      continue;
    const values = byName.get(element.name);
    if (!values || element.type === 'password') continue;
    if (element instanceof HTMLInputElement && (element.type === 'radio' || element.type === 'checkbox')) {
      element.checked = values.includes(element.value);
    } else {
      const i = textIndex.get(element.name) ?? 0;
      element.value = values[i] ?? '';
      textIndex.set(element.name, i + 1);
    }
  }
}

/** The value the JSON API takes, built like the server builds it from the posted form. */
export function valueOf(form: HTMLFormElement, type: string): { ok: true; value: unknown } | { ok: false } {
  const entries = entriesOf(form);
  const all = (name: string) => entries.filter(([n]) => n === name).map(([, v]) => v);
  const one = all('value')[0] ?? '';
  switch (type) {
    case 'text':
    case 'longtext':
      return { ok: true, value: one };
    case 'secret':
      return one === '' ? { ok: false } : { ok: true, value: one };
    case 'url':
    case 'email':
      return { ok: true, value: one.trim() };
    case 'phone':
      return { ok: true, value: one.replace(/[\s().-]/g, '') };
    case 'date':
    case 'select':
      return one.trim() === '' ? { ok: false } : { ok: true, value: one.trim() };
    case 'number': {
      const n = Number(one.trim().replace(',', '.'));
      return one.trim() === '' || !Number.isFinite(n) ? { ok: false } : { ok: true, value: n };
    }
    case 'boolean':
      return one === '' ? { ok: false } : { ok: true, value: one === 'true' };
    case 'multiselect':
      return { ok: true, value: all('value') };
    case 'color_list':
      return {
        ok: true,
        value: all('value')
          .map((c) => c.trim())
          .filter(Boolean)
          .map((c) => (c.startsWith('#') ? c : `#${c}`).toLowerCase()),
      };
    case 'structured':
      return structuredValue(form);
    default:
      return { ok: true, value: one };
  }
}

function structuredValue(form: HTMLFormElement): { ok: true; value: unknown } | { ok: false } {
  const json = form.querySelector<HTMLTextAreaElement>('textarea[name="json"]');
  if (json) {
    try {
      return json.value.trim() === ''
        ? { ok: false }
        : { ok: true, value: JSON.parse(json.value) as unknown };
    } catch {
      return { ok: false };
    }
  }
  const out: Record<string, unknown> = {};
  const set = (path: string, value: unknown) => {
    const parts = path.split('.');
    let node = out;
    parts.forEach((part, i) => {
      if (i === parts.length - 1) node[part] = value;
      else node = (node[part] ??= {}) as Record<string, unknown>;
    });
  };
  const done = new Set<string>();
  for (const element of Array.from(
    form.querySelectorAll<HTMLInputElement | HTMLTextAreaElement | HTMLSelectElement>('[data-kind]'),
  )) {
    const name = element.name;
    if (!name.startsWith('s.') || done.has(name)) continue;
    done.add(name);
    const path = name.slice(2);
    const kind = element.dataset.kind;
    const group = Array.from(form.querySelectorAll<HTMLInputElement>(`[name="${CSS.escape(name)}"]`));
    const text = element.value.trim();
    if (kind === 'boolean') {
      const checked = group.find((e) => e.checked);
      if (checked) set(path, checked.value === 'true');
    } else if (kind === 'multi') {
      const chosen = group.filter((e) => e.checked).map((e) => e.value);
      if (chosen.length > 0) set(path, chosen);
    } else if (kind === 'number' || kind === 'integer') {
      if (text !== '') set(path, Number.isFinite(Number(text)) ? Number(text) : text);
    } else if (kind === 'lines') {
      const lines = text
        .split(/\r?\n/)
        .map((l) => l.trim())
        .filter(Boolean);
      if (lines.length > 0) set(path, lines);
    } else if (text !== '') {
      set(path, text);
    }
  }
  return { ok: true, value: out };
}

function updateCounter(field: HTMLInputElement | HTMLTextAreaElement): void {
  const counter = field.id ? document.getElementById(`${field.id}-count`) : null;
  if (!counter || !field.dataset.maxChars) return;
  const params = charParams(field);
  const over = [...field.value].length > Number(field.dataset.maxChars);
  counter.hidden = false;
  counter.textContent = over ? t('js.chars_over', params) : t('js.chars', params);
  counter.classList.toggle('over', over);
}

export function enhanceValueForm(form: HTMLFormElement): void {
  const key = form.dataset.key ?? '';
  const type = form.dataset.type ?? 'text';
  const storageKey = `intake:${data.intake_id}:${key}`;
  const state = form.querySelector<HTMLElement>('.save-state');
  const secret = type === 'secret';
  let timer: number | undefined;
  let firstChangeAt = 0;
  let saving: Promise<void> | null = null;
  let dirty = false;

  const setState = (text: string) => {
    if (state) state.textContent = text;
  };
  const backup = () => {
    if (secret) return;
    try {
      localStorage.setItem(
        storageKey,
        JSON.stringify({ entries: entriesOf(form), at: Date.now() } satisfies Backup),
      );
    } catch {
      // Storage full or disabled: autosave still runs.
    }
  };
  const clearBackupIf = (entries: string) => {
    if (JSON.stringify(entriesOf(form)) === entries) localStorage.removeItem(storageKey);
  };

  const save = async (): Promise<void> => {
    window.clearTimeout(timer);
    firstChangeAt = 0;
    if (!dirty) return;
    const value = valueOf(form, type);
    if (!value.ok) return;
    dirty = false;
    const snapshot = JSON.stringify(entriesOf(form));
    setState(t('js.saving'));
    try {
      const response = await fetch(apiPath('items', key), {
        method: 'PUT',
        headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
        body: JSON.stringify({ value: value.value }),
      });
      if (response.ok) {
        clearBackupIf(snapshot);
        pendingFlushes.delete(flush);
        setState(`${t('js.saved')} ${formatTime(new Date())}`);
        // Other items depend on this answer: the server says which apply now, so the page is redrawn.
        if (form.closest<HTMLElement>('.card')?.dataset.controls !== undefined) {
          void flushAll().then(() => window.location.reload());
          return;
        }
        void refreshStatus(key).catch(() => undefined);
        if (secret) {
          const input = form.querySelector<HTMLInputElement>('input[type="password"]');
          if (input) input.value = '';
        }
      } else if (response.status === 422) {
        setState('');
        const field = form.querySelector<HTMLInputElement | HTMLTextAreaElement>('[name="value"]');
        showFormError(form, (field && fieldMessage(field)) || t('js.invalid'));
      } else if (response.status === 429 || response.status >= 500) {
        dirty = true;
        pendingFlushes.add(flush);
        setState(t('js.saved_local'));
        window.setTimeout(() => void flush(), RETRY_MS);
      } else {
        setState('');
      }
    } catch {
      dirty = true;
      pendingFlushes.add(flush);
      setState(navigator.onLine ? t('js.saved_local') : t('js.offline'));
      window.setTimeout(() => void flush(), RETRY_MS);
    }
  };
  const flush = async (): Promise<void> => {
    while (saving) await saving;
    saving = save().finally(() => (saving = null));
    await saving;
  };
  forms.set(form, { dirty: () => dirty && valueOf(form, type).ok, flush });
  const schedule = () => {
    dirty = true;
    backup();
    const now = Date.now();
    firstChangeAt ||= now;
    window.clearTimeout(timer);
    timer = window.setTimeout(() => void flush(), now - firstChangeAt > MAX_WAIT_MS ? 0 : TYPING_DELAY_MS);
  };

  form.addEventListener('input', (event) => {
    const target = event.target;
    if (target instanceof HTMLInputElement || target instanceof HTMLTextAreaElement) {
      updateCounter(target);
      if (target.getAttribute('aria-invalid') === 'true') setFieldError(target, '');
      if (target.dataset.autosave === 'text') schedule();
      else {
        dirty = true;
        backup();
      }
    }
  });
  form.addEventListener('change', (event) => {
    const target = event.target as HTMLElement;
    if (target.dataset.autosave && target.dataset.autosave !== 'text') {
      dirty = true;
      backup();
      void flush();
    }
  });
  form.addEventListener('focusout', () => {
    if (dirty && !secret) void flush();
  });
  window.addEventListener('pagehide', () => {
    if (!dirty || secret) return;
    const value = valueOf(form, type);
    if (!value.ok) return;
    void fetch(apiPath('items', key), {
      method: 'PUT',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ value: value.value }),
      keepalive: true,
    }).catch(() => undefined);
  });

  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const submitter = event.submitter;
    const button = submitter instanceof HTMLButtonElement ? submitter : null;
    const { first, message } = validateForm(form);
    if (first) {
      showFormError(form, message);
      return;
    }
    showFormError(form, '');
    void withBusy(button, t('js.submitting'), async () => {
      window.clearTimeout(timer);
      while (saving) await saving;
      const ok = await postForm(form, key, { action: 'submit' });
      if (ok) localStorage.removeItem(storageKey);
    });
  });

  // Restore what was typed but never reached the server (a reload, a lost connection).
  if (!secret) {
    const stored = localStorage.getItem(storageKey);
    const savedAt = Date.parse(form.dataset.savedAt ?? '') || 0;
    if (stored) {
      const copy = JSON.parse(stored) as Backup;
      if (copy.at > savedAt && JSON.stringify(copy.entries) !== JSON.stringify(entriesOf(form))) {
        restore(form, copy.entries);
        setState(t('js.restored'));
        dirty = true;
        void flush();
      } else if (copy.at <= savedAt) {
        localStorage.removeItem(storageKey);
      }
    }
  }
  form.querySelectorAll<HTMLInputElement | HTMLTextAreaElement>('[data-max-chars]').forEach(updateCounter);
}
