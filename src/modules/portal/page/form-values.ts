import type { TFunction } from 'i18next';
import type { ApiError } from '../../../http/errors.js';
import { formatBytes, formatDate, formatList, formatNumber } from './format.js';
import type { ViewItem } from './model.js';
import { schemaFields, valueFromForm, type FormFields } from './schema-form.js';

/**
 * A posted item form as the item's value. `skip`: nothing to save (an empty number, a secret left
 * blank). `invalid`: the text cannot be a value at all (JSON that does not parse).
 */
export type Parsed =
  { kind: 'value'; value: unknown } | { kind: 'skip' } | { kind: 'invalid'; constraint: string };

const first = (v: string | string[] | undefined) => (Array.isArray(v) ? (v[0] ?? '') : (v ?? ''));
const list = (v: string | string[] | undefined) => (v === undefined ? [] : Array.isArray(v) ? v : [v]);

export function valueFromItemForm(item: ViewItem, form: FormFields): Parsed {
  const text = first(form.value);
  switch (item.type) {
    case 'text':
    case 'longtext':
      return { kind: 'value', value: text.replace(/\r\n/g, '\n') };
    case 'secret':
      return text === '' ? { kind: 'skip' } : { kind: 'value', value: text };
    case 'url':
    case 'email':
      return { kind: 'value', value: text.trim() };
    case 'phone':
      // People type spaces, dashes, dots and brackets; E.164 has none of them.
      return { kind: 'value', value: text.replace(/[\s().-]/g, '') };
    case 'date':
    case 'select':
      return text.trim() === '' ? { kind: 'skip' } : { kind: 'value', value: text.trim() };
    case 'number': {
      if (text.trim() === '') return { kind: 'skip' };
      const n = Number(text.trim().replace(',', '.'));
      return Number.isFinite(n) ? { kind: 'value', value: n } : { kind: 'invalid', constraint: 'type' };
    }
    case 'boolean':
      return text === 'true'
        ? { kind: 'value', value: true }
        : text === 'false'
          ? { kind: 'value', value: false }
          : { kind: 'skip' };
    case 'multiselect':
      return { kind: 'value', value: list(form.value) };
    case 'color_list':
      return {
        kind: 'value',
        value: list(form.value)
          .map((c) => c.trim())
          .filter(Boolean)
          .map((c) => (c.startsWith('#') ? c : `#${c}`).toLowerCase()),
      };
    case 'structured': {
      const fields = schemaFields(item.schema);
      if (fields) return { kind: 'value', value: valueFromForm(fields, form) };
      const json = first(form.json).trim();
      if (json === '') return { kind: 'skip' };
      try {
        return { kind: 'value', value: JSON.parse(json) as unknown };
      } catch {
        return { kind: 'invalid', constraint: 'json' };
      }
    }
    default:
      return { kind: 'value', value: text };
  }
}

/** `logo.min_width: the image is …` → "min_width" (the portal API's 422 messages name the constraint). */
export function constraintOf(message: string): string | undefined {
  return /^[a-z][a-z0-9_]*\.([a-z_]+):/.exec(message)?.[1];
}

/** An error of the portal API, said in the page's language (the English detail as a last resort). */
export function clientErrorMessage(
  t: TFunction,
  locale: string,
  item: ViewItem,
  code: string,
  message: string,
  maxBytes: number,
): string {
  const c = item.constraints;
  const n = (v: number | undefined) => (v === undefined ? '' : formatNumber(locale, v));
  switch (code) {
    case 'payload_too_large':
      return t('error.max_bytes', { size: formatBytes(locale, maxBytes) });
    case 'rate_limited':
      return t('error.rate_limited');
    case 'gone':
      return t('error.gone');
    case 'not_found':
      return t('error.not_found');
    case 'conflict':
      return t('error.conflict');
    case 'quota_exceeded':
      return t('error.quota');
    case 'unprocessable':
      break;
    default:
      return t('error.generic', { detail: message });
  }
  const constraint = constraintOf(message) ?? '';
  const params = {
    max_chars: n(c.max_chars),
    min_chars: n(c.min_chars),
    min: n(c.min),
    max: n(c.max),
    min_count: n(c.min_count),
    max_count: n(c.max_count ?? 1),
    min_width: n(c.min_width),
    min_height: n(c.min_height),
    min_date: c.min_date ? formatDate(locale, c.min_date) : '',
    max_date: c.max_date ? formatDate(locale, c.max_date) : '',
    formats: formatList(
      locale,
      (c.formats ?? []).map((f) => f.toUpperCase()),
      'disjunction',
    ),
    size: formatBytes(locale, maxBytes),
  };
  // The form is what went wrong: the sender's example shows it.
  const example =
    item.example && (constraint === 'type' || constraint === 'pattern')
      ? ` ${t('error.example', { example: item.example })}`
      : '';
  if (constraint === 'type' && t(`error.type_${item.type}`, { defaultValue: '' }))
    return t(`error.type_${item.type}`) + example;
  if (constraint === 'formats' && params.formats === '') return t('error.formats_any');
  const known = t(`error.${constraint}`, { ...params, defaultValue: '' });
  return (known || t('error.generic', { detail: message.replace(/^[a-z0-9_.]+:\s*/, '') })) + example;
}

export function apiErrorMessage(
  t: TFunction,
  locale: string,
  item: ViewItem,
  error: ApiError,
  maxBytes: number,
): string {
  return clientErrorMessage(t, locale, item, error.code, error.message, maxBytes);
}
