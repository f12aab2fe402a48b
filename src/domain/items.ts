import { z } from 'zod';
import { conditionProblems, ShowIf, type ConditionalDefinition } from './conditions.js';
import { cachedPattern } from './pattern.js';

/**
 * Item definitions: the one schema for what an intake asks of its client. Used by intake creation,
 * POST /items, templates, the portal view, OpenAPI and the agent tools.
 */
export const FILE_TYPES = ['image', 'file', 'file_list'] as const;
export const VALUE_TYPES = [
  'text',
  'longtext',
  'structured',
  'secret',
  'url',
  'email',
  'phone',
  'date',
  'boolean',
  'number',
  'select',
  'multiselect',
  'color_list',
] as const;
export const ITEM_TYPES = [...FILE_TYPES, ...VALUE_TYPES] as const;
export type ItemType = (typeof ITEM_TYPES)[number];
export type FileItemType = (typeof FILE_TYPES)[number];

export function isFileType(type: string): type is FileItemType {
  return (FILE_TYPES as readonly string[]).includes(type);
}

/** Formats by canonical name, with the content types that detection (magic bytes) reports for them. */
export const FORMATS = {
  png: ['image/png'],
  jpg: ['image/jpeg'],
  svg: ['image/svg+xml'],
  heic: ['image/heic', 'image/heif'],
  webp: ['image/webp'],
  gif: ['image/gif'],
  pdf: ['application/pdf'],
  docx: ['application/vnd.openxmlformats-officedocument.wordprocessingml.document'],
  xlsx: ['application/vnd.openxmlformats-officedocument.spreadsheetml.sheet'],
  pptx: ['application/vnd.openxmlformats-officedocument.presentationml.presentation'],
  zip: ['application/zip'],
  txt: ['text/plain'],
  csv: ['text/csv'],
  mp4: ['video/mp4'],
  mov: ['video/quicktime'],
  mp3: ['audio/mpeg'],
} as const satisfies Record<string, readonly string[]>;
export type Format = keyof typeof FORMATS;
export const IMAGE_FORMATS: readonly Format[] = ['png', 'jpg', 'svg', 'heic', 'webp', 'gif'];
const FORMAT_ALIASES: Record<string, Format> = { jpeg: 'jpg', heif: 'heic', text: 'txt' };

export function canonicalFormat(name: string): Format | undefined {
  const lower = name.toLowerCase();
  // Own keys only: `in` would also accept inherited names such as "constructor" or "toString".
  if (Object.hasOwn(FORMATS, lower)) return lower as Format;
  return Object.hasOwn(FORMAT_ALIASES, lower) ? FORMAT_ALIASES[lower] : undefined;
}

/** What `formats` takes: the canonical names and their aliases (checked case-insensitively, 422 otherwise). */
const FORMAT_NAMES = [...Object.keys(FORMATS), ...Object.keys(FORMAT_ALIASES)];

const positiveInt = z.number().int().positive();
const nonNegativeInt = z.number().int().min(0);

/**
 * A structured item's JSON Schema as the caller wrote it: free-form by nature, so it carries the
 * description of what it holds wherever it appears (agent hosts ask that of every free-form object).
 */
export const ItemJsonSchema = z.record(z.string(), z.unknown()).meta({
  description: 'structured items: a JSON Schema (type, required, properties) the value must satisfy',
});

export const Constraints = z
  .strictObject({
    formats: z
      .array(z.string().min(1).meta({ enum: FORMAT_NAMES }))
      .min(1)
      .optional()
      .meta({
        description:
          'File formats: png, jpg, svg, heic, webp, gif, pdf, docx, xlsx, pptx, zip, txt, csv, mp4, mov, mp3',
      }),
    min_width: positiveInt.optional().meta({ description: 'Images: minimum width in pixels' }),
    min_height: positiveInt.optional().meta({ description: 'Images: minimum height in pixels' }),
    transparent_background: z.boolean().optional().meta({
      description:
        'Images: must have an alpha channel with transparent pixels (SVG: always transparent unless it paints a full background)',
    }),
    max_bytes: positiveInt.optional().meta({ description: 'Files: maximum size of one file in bytes' }),
    min_count: nonNegativeInt.optional().meta({
      description: 'Files: minimum number of files (file_list); choices (multiselect); entries (color_list)',
    }),
    max_count: positiveInt
      .optional()
      .meta({ description: 'Files: maximum number of files; choices; entries' }),
    max_chars: positiveInt.optional().meta({ description: 'Text kinds: maximum length in characters' }),
    min_chars: nonNegativeInt.optional().meta({ description: 'Text kinds: minimum length in characters' }),
    pattern: z
      .string()
      .min(1)
      .optional()
      .meta({ description: 'text: a regular expression the whole value must match' }),
    min: z.number().optional().meta({ description: 'number: smallest value; date: not used' }),
    max: z.number().optional().meta({ description: 'number: largest value' }),
    integer: z.boolean().optional().meta({ description: 'number: whole numbers only' }),
    min_date: z.iso.date().optional().meta({ description: 'date: earliest allowed date' }),
    max_date: z.iso.date().optional().meta({ description: 'date: latest allowed date' }),
  })
  .meta({ id: 'Constraints' });
export type Constraints = z.infer<typeof Constraints>;

export const ItemOption = z.strictObject({
  value: z.string().min(1).max(200),
  label: z.string().min(1).max(200),
});

/** Who answers an item: the client in the portal, or the account holder (a decision). */
export const ASSIGNEES = ['client', 'owner'] as const;
export type Assignee = (typeof ASSIGNEES)[number];

export const Proposal = z
  .strictObject({
    value: z
      .union([z.string(), z.number(), z.boolean(), z.array(z.string())])
      .meta({ description: "The agent's proposed answer, valid for the item's type" }),
    rationale: z.string().trim().min(1).max(2000).meta({ description: 'Why the agent proposes it' }),
  })
  .meta({
    id: 'Proposal',
    description: 'owner items: the answer an agent proposes; it stands when nobody decides otherwise',
  });

export const ITEM_KEY = /^[a-z][a-z0-9_]*$/;

export const ItemDefinition = z
  .strictObject({
    // The snake_case rule is checked with the other definition rules (422), not here (400).
    key: z.string().min(1).max(64).meta({
      description: 'snake_case, matching ^[a-z][a-z0-9_]*$: it becomes a property name in results',
    }),
    label: z.string().trim().min(1).max(200),
    help: z
      .string()
      .max(2000)
      .nullish()
      .transform((v) => v ?? undefined),
    example: z
      .string()
      .max(200)
      .nullish()
      .transform((v) => v ?? undefined)
      .meta({
        description:
          'An example answer, shown to the client as the field placeholder and in the message when an answer does not fit (e.g. "DE89 3704 0044 0532 0130 00" for a pattern)',
      }),
    // Checked with the other definition rules (422 naming the types); the enum tells clients the choices.
    type: z.string().meta({ description: `One of: ${ITEM_TYPES.join(', ')}`, enum: [...ITEM_TYPES] }),
    required: z
      .boolean()
      .nullish()
      .transform((v) => v ?? true),
    constraints: Constraints.nullish().transform((v) => v ?? {}),
    schema: ItemJsonSchema.nullish().transform((v) => v ?? undefined),
    options: z
      .array(ItemOption)
      .max(200)
      .nullish()
      .transform((v) => v ?? undefined)
      .meta({
        description: 'select and multiselect: the choices',
      }),
    assignee: z
      .enum(ASSIGNEES)
      .nullish()
      .transform((v) => v ?? undefined)
      .meta({
        description:
          'client (default): the client answers in the portal. owner: a decision for the account holder, answered in the dashboard; it never reaches the portal, reminders or progress.',
      }),
    proposed: Proposal.nullish().transform((v) => v ?? undefined),
    section: z
      .string()
      .trim()
      .min(1)
      .max(100)
      .nullish()
      .transform((v) => v ?? undefined)
      .meta({
        description:
          'A section title: consecutive items with the same section form one group, with its own heading and progress in the portal',
      }),
    show_if: ShowIf.nullish().transform((v) => v ?? undefined),
  })
  .meta({
    id: 'ItemDefinition',
    examples: [
      {
        key: 'logo',
        label: 'Your logo',
        type: 'image',
        required: true,
        constraints: { formats: ['svg', 'png'], min_width: 1000, transparent_background: true },
      },
    ],
  });
/**
 * A definition as stored and returned: ItemDefinition after parsing (defaults applied, no nulls).
 * Responses use it so the OpenAPI document describes what callers receive.
 */
export const ItemDefinitionRecord = z
  .object({
    key: ItemDefinition.shape.key,
    label: z.string(),
    help: z.string().optional(),
    example: z.string().optional(),
    type: z.string(),
    required: z.boolean(),
    constraints: Constraints,
    schema: ItemJsonSchema.optional(),
    options: z.array(ItemOption).optional(),
    assignee: z.enum(ASSIGNEES).optional(),
    proposed: z
      .object({
        value: z.union([z.string(), z.number(), z.boolean(), z.array(z.string())]),
        rationale: z.string(),
      })
      .optional(),
    section: z.string().optional(),
    // The shape without ShowIf's schema id, so every document renders it the same way (inline).
    show_if: z.object(ShowIf.shape).optional(),
  })
  .meta({ id: 'ItemDefinitionRecord' });
export type ItemDefinitionInput = z.input<typeof ItemDefinition>;
export type ItemDefinition = z.output<typeof ItemDefinition>;

/** Which constraints make sense for which kinds of item (the builder shows only these). */
const FILE_CONSTRAINTS = ['formats', 'max_bytes', 'min_count', 'max_count'];
const IMAGE_CONSTRAINTS = [...FILE_CONSTRAINTS, 'min_width', 'min_height', 'transparent_background'];
const TEXT_CONSTRAINTS = ['max_chars', 'min_chars'];
const APPLICABLE: Record<ItemType, readonly string[]> = {
  image: IMAGE_CONSTRAINTS,
  file: [...IMAGE_CONSTRAINTS],
  file_list: [...IMAGE_CONSTRAINTS],
  text: [...TEXT_CONSTRAINTS, 'pattern'],
  longtext: TEXT_CONSTRAINTS,
  secret: TEXT_CONSTRAINTS,
  structured: [],
  url: ['max_chars'],
  email: [],
  phone: [],
  date: ['min_date', 'max_date'],
  boolean: [],
  number: ['min', 'max', 'integer'],
  select: [],
  multiselect: ['min_count', 'max_count'],
  color_list: ['min_count', 'max_count'],
};

export function applicableConstraints(type: string): readonly string[] {
  return (ITEM_TYPES as readonly string[]).includes(type) ? APPLICABLE[type as ItemType] : [];
}

/** A problem with a definition, phrased for the caller: which item, which constraint, what to fix. */
export interface DefinitionProblem {
  item: string;
  field: string;
  message: string;
}

/** Validates a JSON Schema; returns an error message or undefined. Injected so the domain stays free of Ajv. */
export type SchemaCompiler = (schema: Record<string, unknown>) => string | undefined;

/**
 * Everything wrong with a list of item definitions beyond their shape: unknown types and formats,
 * constraints that do not apply, contradictory bounds, duplicate keys, invalid JSON Schemas.
 */
export function definitionProblems(
  items: readonly ItemDefinition[],
  compileSchema: SchemaCompiler,
  existingKeys: readonly string[] = [],
): DefinitionProblem[] {
  const problems: DefinitionProblem[] = [];
  const seen = new Set(existingKeys);
  for (const item of items) {
    const at = (field: string, message: string) => problems.push({ item: item.key, field, message });
    if (!ITEM_KEY.test(item.key)) {
      at('key', `"${item.key}" is not snake_case: keys match ^[a-z][a-z0-9_]*$ (they become property names)`);
    }
    if (seen.has(item.key)) at('key', `duplicate item key "${item.key}"`);
    seen.add(item.key);
    if (!(ITEM_TYPES as readonly string[]).includes(item.type)) {
      at('type', `unknown type "${item.type}"; use one of ${ITEM_TYPES.join(', ')}`);
      continue;
    }
    const type = item.type as ItemType;
    const c = item.constraints;
    for (const name of Object.keys(c)) {
      if (!APPLICABLE[type].includes(name))
        at(`constraints.${name}`, `${name} does not apply to ${type} items`);
    }
    for (const format of c.formats ?? []) {
      const canonical = canonicalFormat(format);
      if (!canonical)
        at('constraints.formats', `unknown format "${format}"; use ${Object.keys(FORMATS).join(', ')}`);
      else if (type === 'image' && !IMAGE_FORMATS.includes(canonical)) {
        at(
          'constraints.formats',
          `"${format}" is not an image format; use ${IMAGE_FORMATS.join(', ')} or type file`,
        );
      }
    }
    const formats = (c.formats ?? []).map(canonicalFormat);
    if (c.transparent_background && formats.length > 0 && formats.every((f) => f === 'jpg')) {
      at(
        'constraints.transparent_background',
        'a transparent background is impossible in jpg; allow png, svg, webp or heic',
      );
    }
    if (c.min_count !== undefined && c.max_count !== undefined && c.min_count > c.max_count) {
      at('constraints.min_count', `min_count (${c.min_count}) is greater than max_count (${c.max_count})`);
    }
    if (type === 'image' || type === 'file') {
      for (const name of ['min_count', 'max_count'] as const) {
        if ((c[name] ?? 1) > 1)
          at(`constraints.${name}`, `${type} items hold one file; use file_list for several`);
      }
    }
    if (c.min_chars !== undefined && c.max_chars !== undefined && c.min_chars > c.max_chars) {
      at('constraints.min_chars', `min_chars (${c.min_chars}) is greater than max_chars (${c.max_chars})`);
    }
    if (c.min !== undefined && c.max !== undefined && c.min > c.max) {
      at('constraints.min', `min (${c.min}) is greater than max (${c.max})`);
    }
    if (type === 'number' && c.integer && c.min !== undefined && c.max !== undefined && c.min <= c.max) {
      if (Math.ceil(c.min) > c.max)
        at('constraints.integer', `no whole number lies between min (${c.min}) and max (${c.max})`);
    }
    if (c.min_date !== undefined && c.max_date !== undefined && c.min_date > c.max_date) {
      at('constraints.min_date', `min_date (${c.min_date}) is after max_date (${c.max_date})`);
    }
    if (c.pattern !== undefined) {
      const compiled = cachedPattern(c.pattern);
      if (!compiled.ok) at('constraints.pattern', compiled.message);
    }
    problems.push(...assigneeProblems(item, type));
    if (type === 'structured') {
      if (!item.schema) at('schema', 'structured items need a schema (a JSON Schema object)');
      else {
        const error = compileSchema(item.schema);
        if (error) at('schema', `schema is not a valid JSON Schema: ${error}`);
      }
    } else if (item.schema) {
      at('schema', `schema applies only to structured items`);
    }
    if (type === 'select' || type === 'multiselect') {
      if (!item.options || item.options.length === 0) at('options', `${type} items need options`);
      else {
        const values = item.options.map((o) => o.value);
        if (new Set(values).size !== values.length) at('options', 'option values must be unique');
        if (type === 'multiselect' && c.min_count !== undefined && c.min_count > values.length) {
          at('constraints.min_count', `min_count (${c.min_count}) is more than the ${values.length} options`);
        }
      }
    } else if (item.options) {
      at('options', 'options apply only to select and multiselect items');
    }
  }
  return problems;
}

/** Kinds an account holder can answer in the dashboard: values, not files or credentials. */
const OWNER_TYPES: readonly ItemType[] = VALUE_TYPES.filter((t) => t !== 'secret' && t !== 'structured');

export function isOwnerItem(def: Pick<ItemDefinition, 'assignee'>): boolean {
  return def.assignee === 'owner';
}

function assigneeProblems(item: ItemDefinition, type: ItemType): DefinitionProblem[] {
  const problem = (field: string, message: string) => ({ item: item.key, field, message });
  if (!isOwnerItem(item)) {
    return item.proposed ? [problem('proposed', 'proposed applies only to items with assignee owner')] : [];
  }
  if (!OWNER_TYPES.includes(type)) {
    return [problem('assignee', `owner items take a value; use one of ${OWNER_TYPES.join(', ')}`)];
  }
  return [];
}

/**
 * Everything wrong with a request's items: each new definition's own problems, and the conditions of
 * the whole list (the existing items first, in order, then the new ones).
 */
export function requestProblems(
  items: readonly ItemDefinition[],
  compileSchema: SchemaCompiler,
  existing: readonly ConditionalDefinition[] = [],
): DefinitionProblem[] {
  return [
    ...definitionProblems(
      items,
      compileSchema,
      existing.map((e) => e.key),
    ),
    ...conditionProblems([...existing, ...items]),
  ];
}

export function describeProblems(problems: readonly DefinitionProblem[]): string {
  return problems.map((p) => `items.${p.item}.${p.field}: ${p.message}`).join('; ');
}
