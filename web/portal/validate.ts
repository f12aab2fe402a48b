import { t } from './messages.js';

/**
 * The browser's own constraint checks (required, type, min/max, length, pattern), with messages in
 * the page's language next to each field. The server checks again and has the last word.
 */
type Field = HTMLInputElement | HTMLTextAreaElement | HTMLSelectElement;

function messageFor(field: Field): string {
  const v = field.validity;
  if (v.valueMissing) return t('js.required');
  if (v.badInput) return t('js.field_type_number');
  if (v.typeMismatch) return field.type === 'email' ? t('js.field_type_email') : t('js.field_type_url');
  if (v.rangeUnderflow && 'min' in field) return t('js.field_min', { limit: field.min });
  if (v.rangeOverflow && 'max' in field) return t('js.field_max', { limit: field.max });
  if (v.tooShort && 'minLength' in field) return t('js.field_minlength', { limit: field.minLength });
  if (v.tooLong && 'maxLength' in field) return t('js.field_maxlength', { limit: field.maxLength });
  if (v.patternMismatch) {
    const example = field.dataset.example;
    return example ? `${t('js.field_pattern')} ${t('js.example', { example })}` : t('js.field_pattern');
  }
  return v.valid ? '' : t('js.invalid');
}

function errorSlot(field: Field): HTMLElement | null {
  const holder = field.closest('.field');
  return holder?.querySelector<HTMLElement>('.field-error') ?? null;
}

export function setFieldError(field: Field, message: string): void {
  field.setAttribute('aria-invalid', message ? 'true' : 'false');
  if (!message) field.removeAttribute('aria-invalid');
  const slot = errorSlot(field);
  if (slot) {
    slot.textContent = message;
    slot.hidden = !message;
  }
}

/** Checks every field of the form; returns the first invalid one (focused) or null, and a summary message. */
export function validateForm(form: HTMLFormElement): { first: Field | null; message: string } {
  let first: Field | null = null;
  let message = '';
  const seenGroups = new Set<string>();
  for (const element of Array.from(form.elements)) {
    if (!(
      element instanceof HTMLInputElement ||
      element instanceof HTMLTextAreaElement ||
      element instanceof HTMLSelectElement
    ))
      continue;
    if (!element.willValidate) continue;
    if ((element.type === 'radio' || element.type === 'checkbox') && seenGroups.has(element.name)) continue;
    if (element.type === 'radio' || element.type === 'checkbox') seenGroups.add(element.name);
    const own = fieldMessage(element);
    setFieldError(element, own);
    if (own && !first) {
      first = element;
      // A field with its own message slot shows it there; the form-level line is for the others.
      message = errorSlot(element) ? '' : own;
    }
  }
  first?.focus();
  return { first, message };
}

/** What is wrong with one field, in the page's language ('' when nothing is). */
export function fieldMessage(field: Field): string {
  const text = messageFor(field);
  if (text) return text;
  const over = field.dataset.maxChars && [...field.value].length > Number(field.dataset.maxChars);
  return over ? t('js.chars_over', charParams(field)) : '';
}

export function charParams(field: Field): Record<string, string | number> {
  const count = [...field.value].length;
  const max = Number(field.dataset.maxChars ?? 0);
  const n = (x: number) => new Intl.NumberFormat(document.documentElement.lang || 'en').format(x);
  return { count: n(count), max: n(max), over: n(Math.max(0, count - max)) };
}
