import { parsePhoneNumberFromString } from 'libphonenumber-js';
import { formatDate, formatNumber } from '../portal/page/format.js';

/**
 * An answer as a person reads it: option labels instead of their values, Yes/No, dates and numbers in
 * the reader's language, colours as swatches, phone numbers in national format, structured answers as
 * a list of field labels and values. Pure: the page decides the markup.
 */
export type AnswerView =
  | { kind: 'empty' }
  | { kind: 'text'; text: string; long: boolean }
  | { kind: 'link'; href: string; text: string }
  | { kind: 'list'; entries: string[] }
  | { kind: 'colours'; colours: string[] }
  | { kind: 'fields'; fields: { label: string; value: string }[] };

export interface AnswerDefinition {
  type: string;
  options?: { value: string; label: string }[] | undefined;
  schema?: Record<string, unknown> | undefined;
}

export interface Reader {
  lang: string;
  yes: string;
  no: string;
}

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** "company_name" → "Company name", for keys a schema gives no title. */
export function humanKey(key: string): string {
  const words = key.replace(/[_-]+/g, ' ').trim();
  return words.charAt(0).toUpperCase() + words.slice(1);
}

function scalarText(value: unknown, reader: Reader): string {
  if (value === null || value === undefined || value === '') return '—';
  if (typeof value === 'boolean') return value ? reader.yes : reader.no;
  if (typeof value === 'number') return formatNumber(reader.lang, value);
  if (typeof value === 'string') {
    return /^\d{4}-\d{2}-\d{2}$/.test(value) ? formatDate(reader.lang, value) : value;
  }
  if (Array.isArray(value)) return value.map((v) => scalarText(v, reader)).join(', ');
  return JSON.stringify(value);
}

/** The leaf fields of a structured answer by the schema's titles, nested labels joined ("Address › Street"). */
function structuredFields(
  value: Record<string, unknown>,
  schema: Record<string, unknown> | undefined,
  reader: Reader,
): { label: string; value: string }[] {
  const out: { label: string; value: string }[] = [];
  const walk = (node: Record<string, unknown>, nodeSchema: unknown, prefix: string): void => {
    const properties = isRecord(nodeSchema) && isRecord(nodeSchema.properties) ? nodeSchema.properties : {};
    const keys = [...Object.keys(properties), ...Object.keys(node).filter((k) => !(k in properties))];
    for (const key of keys) {
      if (!(key in node)) continue;
      const property = properties[key];
      const title = isRecord(property) && typeof property.title === 'string' ? property.title : undefined;
      const label = `${prefix}${title ?? humanKey(key)}`;
      const inner = node[key];
      if (isRecord(inner)) walk(inner, property, `${label} › `);
      else out.push({ label, value: scalarText(inner, reader) });
    }
  };
  walk(value, schema, '');
  return out;
}

/** A phone number in its country's national format ("01511 2345678"), as typed when it does not parse. */
export function nationalPhone(value: string): string {
  return parsePhoneNumberFromString(value)?.formatNational() ?? value;
}

export function answerView(def: AnswerDefinition, value: unknown, reader: Reader): AnswerView {
  const text = typeof value === 'string' ? value : scalarText(value, reader);
  if (value === null || value === undefined || value === '') return { kind: 'empty' };
  if (Array.isArray(value) && value.length === 0) return { kind: 'empty' };
  const labelOf = (v: unknown) => def.options?.find((o) => o.value === v)?.label ?? String(v);
  switch (def.type) {
    case 'boolean':
      return { kind: 'text', text: value === true ? reader.yes : reader.no, long: false };
    case 'select':
      return { kind: 'text', text: labelOf(value), long: false };
    case 'multiselect':
      return { kind: 'list', entries: (Array.isArray(value) ? value : [value]).map(labelOf) };
    case 'color_list':
      return { kind: 'colours', colours: (Array.isArray(value) ? value : [value]).map(String) };
    case 'date':
      return {
        kind: 'text',
        text: typeof value === 'string' ? formatDate(reader.lang, value) : '',
        long: false,
      };
    case 'number':
      return { kind: 'text', text: scalarText(value, reader), long: false };
    case 'phone':
      return typeof value === 'string'
        ? { kind: 'link', href: `tel:${value}`, text: nationalPhone(value) }
        : { kind: 'text', text: scalarText(value, reader), long: false };
    case 'email':
      return { kind: 'link', href: `mailto:${text}`, text };
    case 'url':
      return /^https?:\/\//i.test(text)
        ? { kind: 'link', href: text, text }
        : { kind: 'text', text, long: false };
    case 'structured':
      return isRecord(value)
        ? { kind: 'fields', fields: structuredFields(value, def.schema, reader) }
        : { kind: 'text', text: scalarText(value, reader), long: true };
    case 'longtext':
      return { kind: 'text', text, long: true };
    default:
      if (Array.isArray(value)) return { kind: 'list', entries: value.map((v) => scalarText(v, reader)) };
      if (isRecord(value)) return { kind: 'fields', fields: structuredFields(value, undefined, reader) };
      return { kind: 'text', text, long: false };
  }
}
