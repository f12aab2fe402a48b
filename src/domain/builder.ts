import { ITEM_KEY, type Constraints } from './items.js';

/**
 * The intake builder's rules, in words an account holder uses: keys made from labels, text formats
 * named instead of typed as regular expressions, format presets for files, and structured items
 * described field by field. Each turns into the API's own item definition (ItemDefinition), which
 * the services check as they check any caller's.
 */

/** A key from a label: "Your logo" → your_logo (snake_case, as item keys must be). */
export function keyFromLabel(label: string): string {
  const slug = label
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .replace(/ß/g, 'ss')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .slice(0, 60)
    .replace(/_+$/, '');
  if (slug === '') return 'item';
  const key = /^[a-z]/.test(slug) ? slug : `item_${slug}`;
  return ITEM_KEY.test(key) ? key : 'item';
}

/** `base`, or `base_2`, `base_3`… : the first not in `taken` (keys are unique within an intake). */
export function uniqueKey(base: string, taken: ReadonlySet<string>): string {
  if (!taken.has(base)) return base;
  for (let n = 2; ; n += 1) {
    const candidate = `${base}_${n}`;
    if (!taken.has(candidate)) return candidate;
  }
}

/** Common text formats by name, each with the pattern it stands for and an answer that fits it. */
export const TEXT_FORMATS = {
  digits: { pattern: '[0-9]+', example: '123456' },
  letters: { pattern: '\\p{L}+', example: 'Anna' },
  letters_digits: { pattern: '[\\p{L}0-9]+', example: 'Room42' },
  postcode_de: { pattern: '[0-9]{5}', example: '10115' },
  postcode_uk: { pattern: '[A-Za-z]{1,2}[0-9][A-Za-z0-9]? ?[0-9][A-Za-z]{2}', example: 'SW1A 1AA' },
  zip_us: { pattern: '[0-9]{5}(-[0-9]{4})?', example: '94103' },
  vat_eu: { pattern: '[A-Z]{2}[0-9A-Z]{2,12}', example: 'DE123456789' },
  iban: { pattern: '[A-Z]{2}[0-9]{2}[A-Z0-9 ]{11,34}', example: 'DE89 3704 0044 0532 0130 00' },
} as const;
export type TextFormat = keyof typeof TEXT_FORMATS;
export const TEXT_FORMAT_NAMES = Object.keys(TEXT_FORMATS) as TextFormat[];

export function isTextFormat(name: string): name is TextFormat {
  return Object.hasOwn(TEXT_FORMATS, name);
}

/** The named format a stored pattern stands for, if it is one of ours. */
export function textFormatOfPattern(pattern: string | undefined): TextFormat | undefined {
  if (pattern === undefined) return undefined;
  return TEXT_FORMAT_NAMES.find((name) => TEXT_FORMATS[name].pattern === pattern);
}

/** Format presets: the constraints a common kind of file needs, in one choice. */
export interface FilePreset {
  /** The item type the preset suits best (a logo is an image; a contract a file). */
  type: 'image' | 'file';
  constraints: Pick<Constraints, 'formats' | 'min_width' | 'transparent_background'>;
}

export const FILE_PRESETS = {
  logo: { type: 'image', constraints: { formats: ['svg', 'png'], min_width: 1000 } },
  logo_transparent: {
    type: 'image',
    constraints: { formats: ['svg', 'png'], min_width: 1000, transparent_background: true },
  },
  photo: { type: 'image', constraints: { formats: ['jpg', 'png'] } },
  print_photo: { type: 'image', constraints: { formats: ['jpg', 'png'], min_width: 3000 } },
  document: { type: 'file', constraints: { formats: ['pdf'] } },
  office: { type: 'file', constraints: { formats: ['pdf', 'docx', 'xlsx', 'pptx'] } },
  spreadsheet: { type: 'file', constraints: { formats: ['xlsx', 'csv'] } },
  video: { type: 'file', constraints: { formats: ['mp4', 'mov'] } },
} as const satisfies Record<string, FilePreset>;
export type FilePresetName = keyof typeof FILE_PRESETS;
export const FILE_PRESET_NAMES = Object.keys(FILE_PRESETS) as FilePresetName[];

export function isFilePreset(name: string): name is FilePresetName {
  return Object.hasOwn(FILE_PRESETS, name);
}

/** Presets that fit an item type: an image item takes image presets only; files take all. */
export function presetsFor(type: string): FilePresetName[] {
  if (type === 'image') return FILE_PRESET_NAMES.filter((n) => FILE_PRESETS[n].type === 'image');
  if (type === 'file' || type === 'file_list') return FILE_PRESET_NAMES;
  return [];
}

/** The preset a file item's constraints match exactly, if any (shown as chosen when editing). */
export function presetOfConstraints(
  type: string,
  c: Pick<Constraints, 'formats' | 'min_width' | 'transparent_background'>,
): FilePresetName | undefined {
  const same = (a: readonly string[] = [], b: readonly string[] = []) =>
    a.length === b.length && a.every((f) => b.includes(f));
  return presetsFor(type).find((name) => {
    const p: FilePreset['constraints'] = FILE_PRESETS[name].constraints;
    return (
      same(p.formats, c.formats) &&
      p.min_width === c.min_width &&
      (p.transparent_background ?? false) === (c.transparent_background ?? false)
    );
  });
}

/** A field of a structured item, as the owner describes it. */
export const FIELD_KINDS = [
  'text',
  'longtext',
  'email',
  'url',
  'date',
  'number',
  'integer',
  'boolean',
  'choice',
  'choices',
] as const;
export type FieldKind = (typeof FIELD_KINDS)[number];

export interface StructuredField {
  label: string;
  kind: FieldKind;
  required: boolean;
  /** choice and choices: the options, as shown to the client. */
  options: string[];
}

export function isFieldKind(kind: string): kind is FieldKind {
  return (FIELD_KINDS as readonly string[]).includes(kind);
}

/** Long text in a structured item: the portal shows a text area above 200 characters. */
const LONG_TEXT_CHARS = 5000;

function propertyOf(field: StructuredField): Record<string, unknown> {
  const title = { title: field.label.trim() };
  switch (field.kind) {
    case 'text':
      return { type: 'string', ...title, maxLength: 200 };
    case 'longtext':
      return { type: 'string', ...title, maxLength: LONG_TEXT_CHARS };
    case 'email':
      return { type: 'string', ...title, format: 'email' };
    case 'url':
      return { type: 'string', ...title, format: 'uri' };
    case 'date':
      return { type: 'string', ...title, format: 'date' };
    case 'number':
      return { type: 'number', ...title };
    case 'integer':
      return { type: 'integer', ...title };
    case 'boolean':
      return { type: 'boolean', ...title };
    case 'choice':
      return { type: 'string', ...title, enum: uniqueOptions(field.options) };
    case 'choices':
      return {
        type: 'array',
        ...title,
        items: { type: 'string', enum: uniqueOptions(field.options) },
        uniqueItems: true,
      };
  }
}

function uniqueOptions(options: readonly string[]): string[] {
  return [...new Set(options.map((o) => o.trim()).filter(Boolean))];
}

/**
 * The JSON Schema of a structured item, generated from its fields: an object with one property per
 * field (keyed by its label's slug), the required fields listed, nothing else accepted. Fields
 * without a label are left out.
 */
export function schemaOfFields(fields: readonly StructuredField[]): Record<string, unknown> {
  const properties: Record<string, unknown> = {};
  const required: string[] = [];
  const taken = new Set<string>();
  for (const field of fields) {
    if (field.label.trim() === '') continue;
    const key = uniqueKey(keyFromLabel(field.label), taken);
    taken.add(key);
    properties[key] = propertyOf(field);
    if (field.required) required.push(key);
  }
  return {
    type: 'object',
    properties,
    ...(required.length > 0 ? { required } : {}),
    additionalProperties: false,
  };
}

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const strings = (v: unknown): string[] | undefined =>
  Array.isArray(v) && v.every((x) => typeof x === 'string') ? v : undefined;

function kindOfProperty(p: Json): { kind: FieldKind; options: string[] } | undefined {
  const options = strings(p.enum);
  if (p.type === 'string' && options) return { kind: 'choice', options };
  if (p.type === 'array' && isObject(p.items)) {
    const itemOptions = strings(p.items.enum);
    return itemOptions ? { kind: 'choices', options: itemOptions } : undefined;
  }
  if (p.type === 'string') {
    if (p.format === 'email') return { kind: 'email', options: [] };
    if (p.format === 'uri' || p.format === 'url') return { kind: 'url', options: [] };
    if (p.format === 'date') return { kind: 'date', options: [] };
    const long = typeof p.maxLength === 'number' && p.maxLength > 200;
    return { kind: long ? 'longtext' : 'text', options: [] };
  }
  if (p.type === 'number' || p.type === 'integer' || p.type === 'boolean') {
    return { kind: p.type, options: [] };
  }
  return undefined;
}

/**
 * The fields of a stored schema, for editing it field by field; undefined when the schema says more
 * than fields can (nesting, patterns, bounds): such a schema is kept as it is.
 */
export function fieldsOfSchema(schema: Record<string, unknown> | undefined): StructuredField[] | undefined {
  if (!schema || schema.type !== 'object' || !isObject(schema.properties)) return undefined;
  const required = strings(schema.required ?? []) ?? [];
  const fields: StructuredField[] = [];
  for (const [key, raw] of Object.entries(schema.properties)) {
    if (!isObject(raw)) return undefined;
    const found = kindOfProperty(raw);
    if (!found) return undefined;
    const label = typeof raw.title === 'string' ? raw.title : key;
    fields.push({ label, kind: found.kind, required: required.includes(key), options: found.options });
  }
  // Only a schema the fields give back exactly (same keys, same order): editing must not rename.
  const regenerated = schemaOfFields(fields);
  return JSON.stringify(regenerated) === JSON.stringify(schema) ? fields : undefined;
}
