import { describe, expect, it } from 'vitest';
import { compileJsonSchema, validateJsonSchema } from '../lib/json-schema.js';
import {
  FILE_PRESETS,
  FILE_PRESET_NAMES,
  TEXT_FORMATS,
  TEXT_FORMAT_NAMES,
  fieldsOfSchema,
  keyFromLabel,
  presetOfConstraints,
  presetsFor,
  schemaOfFields,
  textFormatOfPattern,
  uniqueKey,
  type StructuredField,
} from './builder.js';
import { ItemDefinition, definitionProblems } from './items.js';
import { cachedPattern, matchesPattern } from './pattern.js';

const field = (label: string, kind: StructuredField['kind'], more: Partial<StructuredField> = {}) => ({
  label,
  kind,
  required: false,
  options: [],
  ...more,
});

describe('keys made from labels', () => {
  it('slugs a label into snake_case, accents and ß included', () => {
    expect(keyFromLabel('Your logo')).toBe('your_logo');
    expect(keyFromLabel('Größe & Maße (cm)')).toBe('grosse_masse_cm');
    expect(keyFromLabel('2nd address')).toBe('item_2nd_address');
    expect(keyFromLabel('  ??? ')).toBe('item');
    expect(keyFromLabel('x'.repeat(100))).toHaveLength(60);
  });

  it('numbers a key already taken', () => {
    expect(uniqueKey('logo', new Set())).toBe('logo');
    expect(uniqueKey('logo', new Set(['logo']))).toBe('logo_2');
    expect(uniqueKey('logo', new Set(['logo', 'logo_2']))).toBe('logo_3');
  });
});

describe('text formats in words', () => {
  it.each(TEXT_FORMAT_NAMES)('%s compiles on the linear-time engine and accepts its example', (name) => {
    const { pattern, example } = TEXT_FORMATS[name];
    const compiled = cachedPattern(pattern);
    expect(compiled.ok).toBe(true);
    if (compiled.ok) expect(matchesPattern(compiled.pattern, example)).toBe(true);
    // The same pattern drives the browser's pattern attribute (v flag).
    expect(new RegExp(`^(?:${pattern})$`, 'v').test(example)).toBe(true);
    expect(textFormatOfPattern(pattern)).toBe(name);
  });

  it('refuses what the format excludes', () => {
    const check = (name: keyof typeof TEXT_FORMATS, value: string) => {
      const compiled = cachedPattern(TEXT_FORMATS[name].pattern);
      return compiled.ok && matchesPattern(compiled.pattern, value);
    };
    expect(check('digits', '12a')).toBe(false);
    expect(check('letters', 'Anna1')).toBe(false);
    expect(check('letters', 'Zoë')).toBe(true);
    expect(check('postcode_de', '1011')).toBe(false);
    expect(check('vat_eu', 'de123')).toBe(false);
    expect(textFormatOfPattern('[a-z]+')).toBeUndefined();
  });
});

describe('format presets', () => {
  it.each(FILE_PRESET_NAMES)('%s gives constraints the API accepts for its type', (name) => {
    const preset = FILE_PRESETS[name];
    const item = ItemDefinition.parse({
      key: 'x',
      label: 'X',
      type: preset.type,
      constraints: preset.constraints,
    });
    expect(definitionProblems([item], compileJsonSchema)).toEqual([]);
    expect(presetOfConstraints(preset.type, preset.constraints)).toBe(name);
  });

  it('offers images only image presets, files all of them', () => {
    expect(presetsFor('image')).toEqual(['logo', 'logo_transparent', 'photo', 'print_photo']);
    expect(presetsFor('file_list')).toEqual(FILE_PRESET_NAMES);
    expect(presetsFor('text')).toEqual([]);
    expect(presetOfConstraints('image', { formats: ['png'] })).toBeUndefined();
  });
});

describe('structured items built field by field', () => {
  const fields: StructuredField[] = [
    field('Company name', 'text', { required: true }),
    field('About you', 'longtext'),
    field('Contact email', 'email', { required: true }),
    field('Website', 'url'),
    field('Founded', 'date'),
    field('Budget', 'number'),
    field('Employees', 'integer'),
    field('Has a shop', 'boolean'),
    field('Style', 'choice', { options: ['Modern', 'Classic', 'Modern', ' '] }),
    field('Channels', 'choices', { options: ['Email', 'Phone'] }),
    field('', 'text'),
  ];

  it('generates the JSON Schema from the fields', () => {
    expect(schemaOfFields(fields)).toEqual({
      type: 'object',
      properties: {
        company_name: { type: 'string', title: 'Company name', maxLength: 200 },
        about_you: { type: 'string', title: 'About you', maxLength: 5000 },
        contact_email: { type: 'string', title: 'Contact email', format: 'email' },
        website: { type: 'string', title: 'Website', format: 'uri' },
        founded: { type: 'string', title: 'Founded', format: 'date' },
        budget: { type: 'number', title: 'Budget' },
        employees: { type: 'integer', title: 'Employees' },
        has_a_shop: { type: 'boolean', title: 'Has a shop' },
        style: { type: 'string', title: 'Style', enum: ['Modern', 'Classic'] },
        channels: {
          type: 'array',
          title: 'Channels',
          items: { type: 'string', enum: ['Email', 'Phone'] },
          uniqueItems: true,
        },
      },
      required: ['company_name', 'contact_email'],
      additionalProperties: false,
    });
  });

  it('passes the API validation of structured items, and checks answers as expected', () => {
    const schema = schemaOfFields(fields);
    const item = ItemDefinition.parse({ key: 'company', label: 'Company', type: 'structured', schema });
    expect(definitionProblems([item], compileJsonSchema)).toEqual([]);
    expect(
      validateJsonSchema(schema, {
        company_name: 'Acme',
        contact_email: 'a@example.com',
        style: 'Modern',
        channels: ['Email'],
        has_a_shop: true,
        employees: 12,
      }),
    ).toBeUndefined();
    expect(validateJsonSchema(schema, { company_name: 'Acme' })).toContain('contact_email');
    expect(validateJsonSchema(schema, { company_name: 'A', contact_email: 'a@b.co', x: 1 })).toBeDefined();
    expect(
      validateJsonSchema(schema, { company_name: 'A', contact_email: 'a@b.co', style: 'Odd' }),
    ).toBeDefined();
  });

  it('gives two fields with one label two keys', () => {
    const schema = schemaOfFields([field('Name', 'text'), field('Name', 'text')]);
    expect(Object.keys(schema.properties as object)).toEqual(['name', 'name_2']);
  });

  it('reads a generated schema back into its fields, and refuses what fields cannot say', () => {
    const schema = schemaOfFields(fields);
    const back = fieldsOfSchema(schema);
    expect(back).toEqual(
      fields
        .filter((f) => f.label !== '')
        .map((f) => ({ ...f, options: [...new Set(f.options.map((o) => o.trim()).filter(Boolean))] })),
    );
    expect(
      fieldsOfSchema({ type: 'object', properties: { a: { type: 'string', pattern: 'x' } } }),
    ).toBeUndefined();
    expect(
      fieldsOfSchema({ type: 'object', properties: { a: { type: 'object', properties: {} } } }),
    ).toBeUndefined();
    expect(fieldsOfSchema(undefined)).toBeUndefined();
  });
});
