import type { TFunction } from 'i18next';
import type { SchemaIssue } from '../../../lib/json-schema.js';
import { attr, flag, html, type Html } from './html.js';

/**
 * Structured items: a form generated from the item's JSON Schema. The common shapes (an object of
 * strings, numbers, booleans, enums, lists and nested objects) get one input each; anything else falls
 * back to a single JSON text area. The server parses the posted fields back into the value, and Ajv
 * (lib/json-schema) stays the authority on whether it is valid.
 */
export type FieldKind =
  | 'string'
  | 'text'
  | 'email'
  | 'url'
  | 'date'
  | 'number'
  | 'integer'
  | 'boolean'
  | 'enum'
  | 'lines'
  | 'multi'
  | 'object';

export interface SchemaField {
  path: string;
  name: string;
  label: string;
  help: string | undefined;
  kind: FieldKind;
  required: boolean;
  options: string[];
  min: number | undefined;
  max: number | undefined;
  minLength: number | undefined;
  maxLength: number | undefined;
  pattern: string | undefined;
  children: SchemaField[];
}

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const num = (v: unknown) => (typeof v === 'number' ? v : undefined);
const str = (v: unknown) => (typeof v === 'string' ? v : undefined);

/** "company_name" → "Company name" (when the schema gives no title). */
function humanize(key: string): string {
  const words = key
    .replace(/([a-z])([A-Z])/g, '$1 $2')
    .replace(/[_-]+/g, ' ')
    .trim()
    .toLowerCase();
  return words.charAt(0).toUpperCase() + words.slice(1);
}

function typeOf(schema: Json): string | undefined {
  const type = schema.type;
  if (typeof type === 'string') return type;
  if (Array.isArray(type)) return type.find((t): t is string => typeof t === 'string' && t !== 'null');
  if (Array.isArray(schema.enum)) return 'string';
  return undefined;
}

function kindOf(schema: Json): FieldKind | undefined {
  const type = typeOf(schema);
  if (Array.isArray(schema.enum)) return schema.enum.every((v) => typeof v === 'string') ? 'enum' : undefined;
  switch (type) {
    case 'string': {
      const format = str(schema.format);
      if (format === 'email') return 'email';
      if (format === 'uri' || format === 'url') return 'url';
      if (format === 'date') return 'date';
      return (num(schema.maxLength) ?? 0) > 200 ? 'text' : 'string';
    }
    case 'number':
      return 'number';
    case 'integer':
      return 'integer';
    case 'boolean':
      return 'boolean';
    case 'object':
      return 'object';
    case 'array': {
      const items = isObject(schema.items) ? schema.items : undefined;
      if (!items) return undefined;
      if (Array.isArray(items.enum) && items.enum.every((v) => typeof v === 'string')) return 'multi';
      return typeOf(items) === 'string' ? 'lines' : undefined;
    }
    default:
      return undefined;
  }
}

const MAX_DEPTH = 3;

function fieldsOf(schema: Json, prefix: string, depth: number): SchemaField[] | undefined {
  const properties = schema.properties;
  if (!isObject(properties) || depth > MAX_DEPTH) return undefined;
  const required = Array.isArray(schema.required) ? schema.required.filter((r) => typeof r === 'string') : [];
  const fields: SchemaField[] = [];
  for (const [key, raw] of Object.entries(properties)) {
    if (!isObject(raw)) return undefined;
    const kind = kindOf(raw);
    if (!kind) return undefined;
    const path = prefix ? `${prefix}.${key}` : key;
    const children = kind === 'object' ? fieldsOf(raw, path, depth + 1) : [];
    if (!children) return undefined;
    const items = isObject(raw.items) ? raw.items : {};
    fields.push({
      path,
      name: `s.${path}`,
      label: str(raw.title) ?? humanize(key),
      help: str(raw.description),
      kind,
      required: required.includes(key),
      options: ((kind === 'multi' ? items.enum : raw.enum) as unknown[] | undefined)?.map(String) ?? [],
      min: num(raw.minimum) ?? num(raw.minItems),
      max: num(raw.maximum) ?? num(raw.maxItems),
      minLength: num(raw.minLength),
      maxLength: num(raw.maxLength),
      pattern: str(raw.pattern),
      children,
    });
  }
  return fields;
}

/** The generated fields, or undefined when the schema needs the JSON fallback. */
export function schemaFields(schema: Record<string, unknown> | null): SchemaField[] | undefined {
  if (!schema || typeOf(schema) !== 'object') return undefined;
  return fieldsOf(schema, '', 0);
}

function at(value: unknown, path: string): unknown {
  let current = value;
  for (const part of path.split('.')) current = isObject(current) ? current[part] : undefined;
  return current;
}

export type FormFields = Record<string, string | string[] | undefined>;
const first = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);
const all = (v: string | string[] | undefined) => (v === undefined ? [] : Array.isArray(v) ? v : [v]);

/** The posted form back into a value; empty fields are left out so `required` reports them. */
export function valueFromForm(fields: readonly SchemaField[], form: FormFields): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const field of fields) {
    const key = field.path.split('.').pop() ?? field.path;
    const rawValue = form[field.name];
    const text = first(rawValue)?.trim() ?? '';
    switch (field.kind) {
      case 'object': {
        const nested = valueFromForm(field.children, form);
        if (Object.keys(nested).length > 0) out[key] = nested;
        break;
      }
      case 'boolean':
        if (text === 'true') out[key] = true;
        else if (text === 'false') out[key] = false;
        break;
      case 'number':
      case 'integer': {
        if (text === '') break;
        const parsed = Number(text.replace(',', '.'));
        out[key] = Number.isFinite(parsed) ? parsed : text;
        break;
      }
      case 'lines': {
        const lines = text
          .split(/\r?\n/)
          .map((l) => l.trim())
          .filter(Boolean);
        if (lines.length > 0) out[key] = lines;
        break;
      }
      case 'multi': {
        const chosen = all(rawValue).filter((v) => field.options.includes(v));
        if (chosen.length > 0) out[key] = chosen;
        break;
      }
      default:
        if (text !== '') out[key] = text;
    }
  }
  return out;
}

/** Ajv's findings as one message per field, in the page's language. */
export function fieldErrors(t: TFunction, issues: readonly SchemaIssue[]): Map<string, string> {
  const errors = new Map<string, string>();
  for (const issue of issues) {
    if (errors.has(issue.path)) continue;
    const p = issue.params;
    const limit = p.limit ?? p.missingProperty;
    const known = [
      'required',
      'type',
      'minimum',
      'maximum',
      'exclusiveMinimum',
      'exclusiveMaximum',
      'minLength',
      'maxLength',
      'pattern',
      'format',
      'enum',
      'minItems',
      'maxItems',
    ];
    errors.set(
      issue.path,
      known.includes(issue.keyword)
        ? t(`schema_error.${issue.keyword}`, {
            limit: typeof limit === 'number' || typeof limit === 'string' ? limit : '',
          })
        : t('schema_error.other', { detail: issue.message }),
    );
  }
  return errors;
}

interface RenderContext {
  t: TFunction;
  idPrefix: string;
  value: unknown;
  errors: Map<string, string>;
  disabled: boolean;
}

function describedBy(id: string, help: string | undefined, error: string | undefined): Html {
  const ids = [help ? `${id}-help` : '', error ? `${id}-error` : ''].filter(Boolean).join(' ');
  return attr('aria-describedby', ids || undefined);
}

function fieldControl(field: SchemaField, id: string, ctx: RenderContext, error: string | undefined): Html {
  const current = at(ctx.value, field.path);
  const common = html`id="${id}" name="${field.name}"
  data-kind="${field.kind}"${flag('required', field.required)}${flag(
    'disabled',
    ctx.disabled,
  )}${attr('aria-invalid', error ? 'true' : undefined)}${describedBy(id, field.help, error)}`;
  const text = typeof current === 'string' || typeof current === 'number' ? String(current) : '';
  switch (field.kind) {
    case 'text':
      return html`<textarea
        ${common}
        rows="4"
        ${attr('minlength', field.minLength)}${attr('maxlength', field.maxLength)}
      >
${text}</textarea>`;
    case 'lines':
      return html`<textarea ${common} rows="3">
${Array.isArray(current) ? current.join('\n') : ''}</textarea>`;
    case 'enum':
      return html`<select ${common}>
        <option value="">${ctx.t('choose')}</option>
        ${field.options.map((o) => html`<option${flag('selected', current === o)}>${o}</option>`)}
      </select>`;
    case 'number':
    case 'integer':
      return html`<input
        type="number"
        inputmode="${field.kind === 'integer' ? 'numeric' : 'decimal'}"
        ${common}${attr('min', field.min)}${attr('max', field.max)}
        step="${field.kind === 'integer' ? '1' : 'any'}"
        value="${text}"
      />`;
    default: {
      const type = { email: 'email', url: 'url', date: 'date' }[field.kind as string] ?? 'text';
      return html`<input
        type="${type}"
        ${common}
        value="${text}"
        ${attr('minlength', field.minLength)}${attr(
          'maxlength',
          field.maxLength,
        )}${attr('pattern', field.pattern)}${attr('autocomplete', type === 'email' ? 'email' : undefined)}
      />`;
    }
  }
}

function renderField(field: SchemaField, ctx: RenderContext): Html {
  const id = `${ctx.idPrefix}-${field.path.replaceAll('.', '-')}`;
  const error = ctx.errors.get(field.path);
  const required = field.required ? html` <span class="req" aria-hidden="true">*</span>` : '';
  const help = field.help ? html`<p class="hint" id="${id}-help">${field.help}</p>` : '';
  const errorLine = html`<p class="field-error" id="${id}-error" ${flag('hidden', !error)}>
    ${error ?? ''}
  </p>`;
  if (field.kind === 'object') {
    return html`<fieldset class="group">
      <legend>${field.label}${required}</legend>
      ${help}${field.children.map((c) => renderField(c, ctx))}
    </fieldset>`;
  }
  if (field.kind === 'boolean' || field.kind === 'multi') {
    const current = at(ctx.value, field.path);
    const choices =
      field.kind === 'boolean'
        ? [
            { value: 'true', label: ctx.t('yes'), on: current === true },
            { value: 'false', label: ctx.t('no'), on: current === false },
          ]
        : field.options.map((o) => ({
            value: o,
            label: o,
            on: Array.isArray(current) && current.includes(o),
          }));
    const type = field.kind === 'boolean' ? 'radio' : 'checkbox';
    return html`<fieldset
      class="field choices"
      data-field="${field.path}"
      ${describedBy(id, field.help, error)}
    >
      <legend>${field.label}${required}</legend>
      ${help}${choices.map(
        (c, i) =>
          html`<label class="choice"
            ><input
              type="${type}"
              name="${field.name}"
              value="${c.value}"
              data-kind="${field.kind}"
              ${flag(
                'checked',
                c.on,
              )}${flag('required', field.required && type === 'radio' && i === 0)}${flag('disabled', ctx.disabled)}
            />
            <span>${c.label}</span></label
          >`,
      )}${errorLine}
    </fieldset>`;
  }
  return html`<div class="field" data-field="${field.path}">
    <label for="${id}">${field.label}${required}</label>${help}${fieldControl(
      field,
      id,
      ctx,
      error,
    )}${errorLine}
  </div>`;
}

export function renderSchemaFields(
  fields: readonly SchemaField[],
  options: { t: TFunction; idPrefix: string; value: unknown; errors: Map<string, string>; disabled: boolean },
): Html {
  return html`${fields.map((f) => renderField(f, options))}`;
}
