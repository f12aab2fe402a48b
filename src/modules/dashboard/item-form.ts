import { ITEM_KEY } from '../../domain/items.js';

/**
 * The item rows of the intake and template forms, turned into the API's item definitions. Only the
 * shape is built here; the one schema (ItemDefinition) and the services check every rule, so a
 * dashboard form can never accept what the REST API would refuse.
 */
export interface ItemFormRow {
  key: string;
  label: string;
  type: string;
  help: string;
  example: string;
  required: boolean;
  assignee: string;
  formats: string;
  min_width: string;
  min_height: string;
  transparent_background: boolean;
  max_mb: string;
  min_count: string;
  max_count: string;
  min_chars: string;
  max_chars: string;
  pattern: string;
  min: string;
  max: string;
  integer: boolean;
  min_date: string;
  max_date: string;
  /** One choice per line: `value: Label`, or just the label. */
  options: string;
  /** structured items: the JSON Schema. */
  schema: string;
}

const TEXT_FIELDS = [
  'key',
  'label',
  'type',
  'help',
  'example',
  'assignee',
  'formats',
  'min_width',
  'min_height',
  'max_mb',
  'min_count',
  'max_count',
  'min_chars',
  'max_chars',
  'pattern',
  'min',
  'max',
  'min_date',
  'max_date',
  'options',
  'schema',
] as const;

export function emptyRow(): ItemFormRow {
  return {
    key: '',
    label: '',
    type: 'text',
    help: '',
    example: '',
    required: true,
    assignee: 'client',
    formats: '',
    min_width: '',
    min_height: '',
    transparent_background: false,
    max_mb: '',
    min_count: '',
    max_count: '',
    min_chars: '',
    max_chars: '',
    pattern: '',
    min: '',
    max: '',
    integer: false,
    min_date: '',
    max_date: '',
    options: '',
    schema: '',
  };
}

/** Rows as posted: fields named items[<n>][<field>]; rows with neither key nor label are left out. */
export function rowsOf(form: URLSearchParams): ItemFormRow[] {
  const rows = new Map<number, ItemFormRow>();
  for (const [name, value] of form) {
    const match = /^items\[(\d{1,3})\]\[([a-z_]+)\]$/.exec(name);
    if (!match) continue;
    const index = Number(match[1]);
    const field = match[2] ?? '';
    const row = rows.get(index) ?? { ...emptyRow(), required: false };
    if (field === 'required' || field === 'transparent_background' || field === 'integer') {
      row[field] = value === 'on' || value === 'true';
    } else if ((TEXT_FIELDS as readonly string[]).includes(field)) {
      row[field as (typeof TEXT_FIELDS)[number]] = value;
    }
    rows.set(index, row);
  }
  return [...rows.entries()]
    .sort(([a], [b]) => a - b)
    .map(([, row]) => row)
    .filter((row) => row.key.trim() !== '' || row.label.trim() !== '');
}

/** A key from a label when none was typed: "Your logo" → your_logo. */
export function keyFromLabel(label: string): string {
  const slug = label
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .slice(0, 64);
  if (slug === '') return 'item';
  const key = /^[a-z]/.test(slug) ? slug : `item_${slug}`;
  return ITEM_KEY.test(key) ? key : 'item';
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

/** One row as an item definition (input to the ItemDefinition schema). */
export function definitionOfRow(row: ItemFormRow): Record<string, unknown> {
  const maxBytes = numberOr(row.max_mb, 1024 * 1024);
  const constraints = withoutUndefined({
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
    pattern: row.pattern.trim() || undefined,
    min: numberOr(row.min),
    max: numberOr(row.max),
    integer: row.integer || undefined,
    min_date: row.min_date.trim() || undefined,
    max_date: row.max_date.trim() || undefined,
  });
  return withoutUndefined({
    key: row.key.trim() || keyFromLabel(row.label),
    label: row.label.trim(),
    help: row.help.trim() || undefined,
    example: row.example.trim() || undefined,
    type: row.type,
    required: row.required,
    constraints: Object.keys(constraints).length > 0 ? constraints : undefined,
    options: optionsOf(row.options),
    schema: schemaOf(row.schema),
    assignee: row.assignee === 'owner' ? 'owner' : undefined,
  });
}

/** The rows of a stored definition (editing a template). */
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
  return {
    key: def.key,
    label: def.label,
    type: def.type,
    help: def.help ?? '',
    example: def.example ?? '',
    required: def.required ?? true,
    assignee: def.assignee ?? 'client',
    formats: Array.isArray(c.formats) ? (c.formats as string[]).join(', ') : '',
    min_width: text(c.min_width),
    min_height: text(c.min_height),
    transparent_background: c.transparent_background === true,
    max_mb:
      typeof c.max_bytes === 'number' ? String(Math.round((c.max_bytes / 1024 / 1024) * 1000) / 1000) : '',
    min_count: text(c.min_count),
    max_count: text(c.max_count),
    min_chars: text(c.min_chars),
    max_chars: text(c.max_chars),
    pattern: text(c.pattern),
    min: text(c.min),
    max: text(c.max),
    integer: c.integer === true,
    min_date: text(c.min_date),
    max_date: text(c.max_date),
    options: (def.options ?? []).map((o) => `${o.value}: ${o.label}`).join('\n'),
    schema: def.schema ? JSON.stringify(def.schema, null, 2) : '',
  };
}
