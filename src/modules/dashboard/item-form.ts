import {
  FILE_PRESETS,
  TEXT_FORMATS,
  fieldsOfSchema,
  isFieldKind,
  isFilePreset,
  isTextFormat,
  keyFromLabel,
  presetOfConstraints,
  schemaOfFields,
  textFormatOfPattern,
  uniqueKey,
  type StructuredField,
} from '../../domain/builder.js';
import { ITEM_TYPES, applicableConstraints } from '../../domain/items.js';

export { keyFromLabel } from '../../domain/builder.js';

/**
 * The builder's item cards (intake and template forms), turned into the API's item definitions.
 * Only the shape is built here; the one schema (ItemDefinition) and the services check every rule, so
 * a dashboard form can never accept what the REST API would refuse. Constraints that do not apply to
 * the chosen type are left out (without script every group of fields is on the page).
 */
export interface FieldFormRow {
  label: string;
  kind: string;
  required: boolean;
  /** choice, choices: one option per line. */
  options: string;
}

export interface ItemFormRow {
  key: string;
  label: string;
  type: string;
  help: string;
  example: string;
  required: boolean;
  assignee: string;
  /** File formats, comma-separated (checkboxes post one value each). */
  formats: string;
  /** A format preset to fill the file constraints with (see FILE_PRESETS). */
  preset: string;
  min_width: string;
  min_height: string;
  transparent_background: boolean;
  max_mb: string;
  min_count: string;
  max_count: string;
  min_chars: string;
  max_chars: string;
  /** A named text format (TEXT_FORMATS), "any", or "custom" (the stored pattern is kept). */
  text_format: string;
  /** A pattern set through the API, kept as it is (the builder never asks for one). */
  pattern: string;
  min: string;
  max: string;
  integer: boolean;
  min_date: string;
  max_date: string;
  /** One choice per line: `value: Label`, or just the label. */
  options: string;
  /** structured items: the fields the schema is generated from. */
  fields: FieldFormRow[];
  /** structured items: a JSON Schema the fields cannot express (set through the API), kept. */
  schema: string;
}

const TEXT_FIELDS = [
  'key',
  'label',
  'type',
  'help',
  'example',
  'assignee',
  'preset',
  'min_width',
  'min_height',
  'max_mb',
  'min_count',
  'max_count',
  'min_chars',
  'max_chars',
  'text_format',
  'pattern',
  'min',
  'max',
  'min_date',
  'max_date',
  'options',
  'schema',
] as const;
const FLAGS = ['required', 'transparent_background', 'integer'] as const;

export function emptyField(): FieldFormRow {
  return { label: '', kind: 'text', required: false, options: '' };
}

export function emptyRow(type = 'text'): ItemFormRow {
  return {
    key: '',
    label: '',
    type,
    help: '',
    example: '',
    required: true,
    assignee: 'client',
    formats: '',
    preset: '',
    min_width: '',
    min_height: '',
    transparent_background: false,
    max_mb: '',
    min_count: '',
    max_count: '',
    min_chars: '',
    max_chars: '',
    text_format: 'any',
    pattern: '',
    min: '',
    max: '',
    integer: false,
    min_date: '',
    max_date: '',
    options: '',
    fields: [],
    schema: '',
  };
}

const ON = (value: string) => value === 'on' || value === 'true';

/** Rows as posted: fields named items[<n>][<field>] (and items[<n>][fields][<m>][<part>]). */
export function allRowsOf(form: URLSearchParams): ItemFormRow[] {
  const rows = new Map<number, ItemFormRow>();
  const fieldRows = new Map<number, Map<number, FieldFormRow>>();
  for (const [name, value] of form) {
    const match = /^items\[(\d{1,3})\]\[([a-z_]+)\](?:\[(\d{1,2})\]\[([a-z_]+)\])?$/.exec(name);
    if (!match) continue;
    const index = Number(match[1]);
    const field = match[2] ?? '';
    const row = rows.get(index) ?? { ...emptyRow(), required: false, text_format: '' };
    rows.set(index, row);
    if (field === 'fields' && match[3] !== undefined) {
      const byIndex = fieldRows.get(index) ?? new Map<number, FieldFormRow>();
      fieldRows.set(index, byIndex);
      const fieldRow = byIndex.get(Number(match[3])) ?? emptyField();
      byIndex.set(Number(match[3]), fieldRow);
      const part = match[4];
      if (part === 'label' || part === 'kind' || part === 'options') fieldRow[part] = value;
      else if (part === 'required') fieldRow.required = ON(value);
    } else if ((FLAGS as readonly string[]).includes(field)) {
      row[field as (typeof FLAGS)[number]] = ON(value);
    } else if (field === 'formats') {
      row.formats = row.formats ? `${row.formats}, ${value}` : value;
    } else if ((TEXT_FIELDS as readonly string[]).includes(field)) {
      row[field as (typeof TEXT_FIELDS)[number]] = value;
    }
  }
  for (const [index, byIndex] of fieldRows) {
    const row = rows.get(index);
    if (row) row.fields = [...byIndex.entries()].sort(([a], [b]) => a - b).map(([, f]) => f);
  }
  return [...rows.entries()].sort(([a], [b]) => a - b).map(([, row]) => row);
}

/** The rows that say something (a key or a label); empty spare cards are left out. */
export function rowsOf(form: URLSearchParams): ItemFormRow[] {
  return allRowsOf(form).filter((row) => row.key.trim() !== '' || row.label.trim() !== '');
}

function numberOr(text: string, scale = 1): number | string | undefined {
  const trimmed = text.trim();
  if (trimmed === '') return undefined;
  const value = Number(trimmed);
  // Left as text when it is not a number: the schema then names the field and the problem.
  return Number.isFinite(value) ? Math.round(value * scale * 1000) / 1000 : trimmed;
}

function optionsOf(text: string): { value: string; label: string }[] | undefined {
  const lines = text
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter(Boolean);
  if (lines.length === 0) return undefined;
  return lines.map((line) => {
    const index = line.indexOf(':');
    if (index > 0) return { value: line.slice(0, index).trim(), label: line.slice(index + 1).trim() };
    return { value: keyFromLabel(line), label: line };
  });
}

function schemaOf(text: string): unknown {
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text; // not an object: the schema check reports it
  }
}

function withoutUndefined(record: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(record).filter(([, value]) => value !== undefined && value !== ''),
  );
}

function structuredFieldsOf(rows: readonly FieldFormRow[]): StructuredField[] {
  return rows
    .filter((f) => f.label.trim() !== '')
    .map((f) => ({
      label: f.label.trim(),
      kind: isFieldKind(f.kind) ? f.kind : 'text',
      required: f.required,
      options: f.options.split(/\r?\n|,/).map((o) => o.trim()),
    }));
}

/** The pattern a row's text format stands for: a named format, the kept custom one, or none. */
function patternOf(row: ItemFormRow): string | undefined {
  if (isTextFormat(row.text_format)) return TEXT_FORMATS[row.text_format].pattern;
  if (row.text_format === 'any') return undefined;
  return row.pattern.trim() || undefined;
}

/** A preset fills the file constraints it names, unless the owner set them by hand. */
function withPreset(row: ItemFormRow): ItemFormRow {
  if (!isFilePreset(row.preset) || row.formats.trim() !== '' || row.min_width.trim() !== '') return row;
  const preset: { formats?: readonly string[]; min_width?: number; transparent_background?: boolean } =
    FILE_PRESETS[row.preset].constraints;
  return {
    ...row,
    formats: (preset.formats ?? []).join(', '),
    min_width: preset.min_width === undefined ? '' : String(preset.min_width),
    transparent_background: row.transparent_background || preset.transparent_background === true,
  };
}

/** One row as an item definition (input to the ItemDefinition schema). */
export function definitionOfRow(given: ItemFormRow): Record<string, unknown> {
  const row = withPreset(given);
  const applicable = applicableConstraints(row.type);
  const maxBytes = numberOr(row.max_mb, 1024 * 1024);
  const pattern = patternOf(row);
  const all = withoutUndefined({
    formats: row.formats.trim()
      ? row.formats
          .split(/[\s,]+/)
          .map((f) => f.trim().toLowerCase())
          .filter(Boolean)
      : undefined,
    min_width: numberOr(row.min_width),
    min_height: numberOr(row.min_height),
    transparent_background: row.transparent_background || undefined,
    max_bytes: typeof maxBytes === 'number' ? Math.round(maxBytes) : maxBytes,
    min_count: numberOr(row.min_count),
    max_count: numberOr(row.max_count),
    min_chars: numberOr(row.min_chars),
    max_chars: numberOr(row.max_chars),
    pattern,
    min: numberOr(row.min),
    max: numberOr(row.max),
    integer: row.integer || undefined,
    min_date: row.min_date.trim() || undefined,
    max_date: row.max_date.trim() || undefined,
  });
  // An unknown type keeps everything, so the service names the type rather than fields vanishing.
  const known = (ITEM_TYPES as readonly string[]).includes(row.type);
  const kept = known ? Object.fromEntries(Object.entries(all).filter(([n]) => applicable.includes(n))) : all;
  const choices = row.type === 'select' || row.type === 'multiselect';
  const fields = structuredFieldsOf(row.fields);
  const formatExample = isTextFormat(row.text_format) ? TEXT_FORMATS[row.text_format].example : undefined;
  return withoutUndefined({
    key: row.key.trim() || keyFromLabel(row.label),
    label: row.label.trim(),
    help: row.help.trim() || undefined,
    example: row.example.trim() || (row.type === 'text' ? formatExample : undefined),
    type: row.type,
    required: row.required,
    constraints: Object.keys(kept).length > 0 ? kept : undefined,
    options: choices || !known ? optionsOf(row.options) : undefined,
    schema:
      row.type !== 'structured' && known
        ? undefined
        : fields.length > 0
          ? schemaOfFields(fields)
          : schemaOf(row.schema),
    assignee: row.assignee === 'owner' ? 'owner' : undefined,
  });
}

/**
 * The definitions of the builder's rows. Keys left empty are made from the labels, numbered where
 * two labels give one key or a key is already the intake's (`taken`).
 */
export function definitionsOfRows(
  rows: readonly ItemFormRow[],
  taken: readonly string[] = [],
): Record<string, unknown>[] {
  const keys = new Set([...taken, ...rows.map((r) => r.key.trim()).filter(Boolean)]);
  return rows.map((row) => {
    const definition = definitionOfRow(row);
    if (row.key.trim() !== '') return definition;
    const key = uniqueKey(keyFromLabel(row.label), keys);
    keys.add(key);
    return { ...definition, key };
  });
}

/** The rows of a stored definition (editing a template or an intake's item). */
export function rowOfDefinition(def: {
  key: string;
  label: string;
  type: string;
  help?: string | null | undefined;
  example?: string | null | undefined;
  required?: boolean | null | undefined;
  constraints?: Record<string, unknown> | null | undefined;
  options?: { value: string; label: string }[] | null | undefined;
  schema?: Record<string, unknown> | null | undefined;
  assignee?: string | null | undefined;
}): ItemFormRow {
  const c = def.constraints ?? {};
  const text = (value: unknown) =>
    typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean' ? String(value) : '';
  const formats = Array.isArray(c.formats) ? (c.formats as string[]) : undefined;
  const pattern = typeof c.pattern === 'string' ? c.pattern : undefined;
  const named = textFormatOfPattern(pattern);
  const fields = def.schema ? fieldsOfSchema(def.schema) : undefined;
  return {
    key: def.key,
    label: def.label,
    type: def.type,
    help: def.help ?? '',
    example: def.example ?? '',
    required: def.required ?? true,
    assignee: def.assignee ?? 'client',
    formats: formats ? formats.join(', ') : '',
    preset:
      presetOfConstraints(def.type, {
        formats,
        min_width: typeof c.min_width === 'number' ? c.min_width : undefined,
        transparent_background: c.transparent_background === true,
      }) ?? '',
    min_width: text(c.min_width),
    min_height: text(c.min_height),
    transparent_background: c.transparent_background === true,
    max_mb:
      typeof c.max_bytes === 'number' ? String(Math.round((c.max_bytes / 1024 / 1024) * 1000) / 1000) : '',
    min_count: text(c.min_count),
    max_count: text(c.max_count),
    min_chars: text(c.min_chars),
    max_chars: text(c.max_chars),
    text_format: named ?? (pattern ? 'custom' : 'any'),
    pattern: pattern ?? '',
    min: text(c.min),
    max: text(c.max),
    integer: c.integer === true,
    min_date: text(c.min_date),
    max_date: text(c.max_date),
    options: (def.options ?? []).map((o) => `${o.value}: ${o.label}`).join('\n'),
    fields: (fields ?? []).map((f) => ({
      label: f.label,
      kind: f.kind,
      required: f.required,
      options: f.options.join('\n'),
    })),
    schema: def.schema && !fields ? JSON.stringify(def.schema, null, 2) : '',
  };
}

/**
 * A problem message with the items named by their labels, as the owner wrote them:
 * `items.logo.constraints.formats: …` → `“Your logo” constraints.formats: …` (zod's `items.2.…` too).
 */
export function withItemLabels(
  message: string,
  items: readonly { key?: unknown; label?: unknown }[],
): string {
  return message.replace(/items\.([a-z0-9_]+)\.?/g, (whole, ref: string) => {
    const item = /^\d+$/.test(ref) ? items[Number(ref)] : items.find((i) => i.key === ref);
    return typeof item?.label === 'string' && item.label.trim() !== '' ? `“${item.label.trim()}” ` : whole;
  });
}
