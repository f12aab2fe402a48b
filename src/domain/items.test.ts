import { describe, expect, it } from 'vitest';
import { compileJsonSchema } from '../lib/json-schema.js';
import {
  canonicalFormat,
  definitionProblems,
  describeProblems,
  FORMATS,
  IMAGE_FORMATS,
  isFileType,
  ITEM_TYPES,
  ItemDefinition,
  type DefinitionProblem,
  type ItemDefinitionInput,
} from './items.js';

const def = (input: ItemDefinitionInput): ItemDefinition => ItemDefinition.parse(input);
const problemsOf = (inputs: ItemDefinitionInput[], existingKeys: string[] = []): DefinitionProblem[] =>
  definitionProblems(inputs.map(def), compileJsonSchema, existingKeys);
const FORMAT_LIST = Object.keys(FORMATS).join(', ');

describe('ItemDefinition schema', () => {
  it('fills defaults: required true, constraints {}, absent optional fields', () => {
    expect(def({ key: 'logo', label: 'Logo', type: 'image' })).toEqual({
      key: 'logo',
      label: 'Logo',
      type: 'image',
      required: true,
      constraints: {},
    });
  });

  it('treats null as absent for every optional field', () => {
    const parsed = def({
      key: 'notes',
      label: 'Notes',
      type: 'longtext',
      help: null,
      required: null,
      constraints: null,
      schema: null,
      options: null,
    });
    expect(parsed).toEqual({
      key: 'notes',
      label: 'Notes',
      type: 'longtext',
      required: true,
      constraints: {},
      help: undefined,
      schema: undefined,
      options: undefined,
      assignee: undefined,
      proposed: undefined,
    });
  });

  it('keeps required false and the given constraints', () => {
    const parsed = def({
      key: 'bio',
      label: '  Bio  ',
      type: 'text',
      required: false,
      constraints: { max_chars: 10 },
    });
    expect(parsed.required).toBe(false);
    expect(parsed.constraints).toEqual({ max_chars: 10 });
    expect(parsed.label).toBe('Bio');
  });

  it.each(['Logo', '1logo', '_logo', 'lo-go', 'lo go', 'logö'])(
    'reports the key %j as a definition problem (422, not a shape error)',
    (key) => {
      expect(ItemDefinition.safeParse({ key, label: 'L', type: 'text' }).success).toBe(true);
      expect(problemsOf([{ key, label: 'L', type: 'text' }])).toEqual([
        {
          item: key,
          field: 'key',
          message: `"${key}" is not snake_case: keys match ^[a-z][a-z0-9_]*$ (they become property names)`,
        },
      ]);
    },
  );

  it('rejects an empty key as a shape error', () => {
    expect(ItemDefinition.safeParse({ key: '', label: 'L', type: 'text' }).success).toBe(false);
  });

  it.each(['a', 'logo_2', 'z9', 'a'.repeat(64)])('accepts the key %j', (key) => {
    expect(ItemDefinition.safeParse({ key, label: 'L', type: 'text' }).success).toBe(true);
  });

  it('rejects keys longer than 64 characters and empty labels', () => {
    expect(ItemDefinition.safeParse({ key: 'a'.repeat(65), label: 'L', type: 'text' }).success).toBe(false);
    expect(ItemDefinition.safeParse({ key: 'a', label: '   ', type: 'text' }).success).toBe(false);
  });

  it('rejects an unknown constraint name (strict object) and names it', () => {
    const result = ItemDefinition.safeParse({
      key: 'a',
      label: 'A',
      type: 'text',
      constraints: { max_char: 5 },
    });
    expect(result.success).toBe(false);
    if (!result.success) {
      const issue = result.error.issues[0];
      expect(issue?.code).toBe('unrecognized_keys');
      expect(issue?.path).toEqual(['constraints']);
      expect(issue?.message).toContain('max_char');
    }
  });

  it('rejects an unknown top-level field', () => {
    const result = ItemDefinition.safeParse({ key: 'a', label: 'A', type: 'text', requried: true });
    expect(result.success).toBe(false);
  });

  it.each([
    ['min_width', 0],
    ['min_width', 1.5],
    ['max_bytes', -1],
    ['min_count', -1],
    ['max_count', 0],
    ['max_chars', 0],
    ['min_date', '2026-02-30'],
    ['formats', []],
    ['pattern', ''],
  ])('rejects constraints.%s = %j', (name, value) => {
    expect(
      ItemDefinition.safeParse({ key: 'a', label: 'A', type: 'text', constraints: { [name]: value } })
        .success,
    ).toBe(false);
  });

  it('accepts min_count 0 and min_chars 0', () => {
    expect(def({ key: 'a', label: 'A', type: 'text', constraints: { min_chars: 0 } }).constraints).toEqual({
      min_chars: 0,
    });
    expect(
      def({ key: 'a', label: 'A', type: 'file_list', constraints: { min_count: 0 } }).constraints,
    ).toEqual({ min_count: 0 });
  });

  it('rejects options with empty values or labels', () => {
    expect(
      ItemDefinition.safeParse({
        key: 'a',
        label: 'A',
        type: 'select',
        options: [{ value: '', label: 'x' }],
      }).success,
    ).toBe(false);
  });
});

describe('canonicalFormat', () => {
  it.each([
    ['png', 'png'],
    ['PNG', 'png'],
    ['jpg', 'jpg'],
    ['jpeg', 'jpg'],
    ['JPEG', 'jpg'],
    ['heif', 'heic'],
    ['heic', 'heic'],
    ['text', 'txt'],
    ['pdf', 'pdf'],
  ])('%s → %s', (name, canonical) => {
    expect(canonicalFormat(name)).toBe(canonical);
  });

  it.each(['bmp', 'tiff', '', 'constructor', 'toString', '__proto__', 'hasOwnProperty'])(
    'unknown %j → undefined',
    (name) => {
      expect(canonicalFormat(name)).toBeUndefined();
    },
  );

  it('lists image formats that are all known formats', () => {
    expect(IMAGE_FORMATS).toEqual(['png', 'jpg', 'svg', 'heic', 'webp', 'gif']);
    for (const f of IMAGE_FORMATS) expect(canonicalFormat(f)).toBe(f);
  });
});

describe('isFileType', () => {
  it('is true for file kinds only', () => {
    expect(ITEM_TYPES.filter((t) => isFileType(t))).toEqual(['image', 'file', 'file_list']);
    expect(isFileType('files')).toBe(false);
  });
});

describe('definitionProblems', () => {
  it('finds nothing wrong with sound definitions of every type', () => {
    expect(
      problemsOf([
        {
          key: 'logo',
          label: 'Logo',
          type: 'image',
          constraints: { formats: ['svg', 'png'], min_width: 1000, transparent_background: true },
        },
        { key: 'brief', label: 'Brief', type: 'file', constraints: { formats: ['pdf'], max_bytes: 1000 } },
        { key: 'photos', label: 'Photos', type: 'file_list', constraints: { min_count: 2, max_count: 5 } },
        { key: 'name', label: 'Name', type: 'text', constraints: { pattern: '[A-Z].*', max_chars: 40 } },
        { key: 'about', label: 'About', type: 'longtext', constraints: { min_chars: 10, max_chars: 10 } },
        { key: 'pw', label: 'Password', type: 'secret', constraints: { max_chars: 100 } },
        {
          key: 'company',
          label: 'Company',
          type: 'structured',
          schema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
        },
        { key: 'site', label: 'Site', type: 'url', constraints: { max_chars: 200 } },
        { key: 'mail', label: 'Mail', type: 'email' },
        { key: 'tel', label: 'Tel', type: 'phone' },
        {
          key: 'launch',
          label: 'Launch',
          type: 'date',
          constraints: { min_date: '2026-01-01', max_date: '2026-01-01' },
        },
        { key: 'ok', label: 'OK', type: 'boolean' },
        { key: 'budget', label: 'Budget', type: 'number', constraints: { min: 1, max: 1, integer: true } },
        { key: 'size', label: 'Size', type: 'select', options: [{ value: 's', label: 'S' }] },
        {
          key: 'tags',
          label: 'Tags',
          type: 'multiselect',
          options: [
            { value: 'a', label: 'A' },
            { value: 'b', label: 'B' },
          ],
          constraints: { min_count: 2, max_count: 2 },
        },
        { key: 'colors', label: 'Colors', type: 'color_list', constraints: { min_count: 1, max_count: 3 } },
      ]),
    ).toEqual([]);
  });

  it('reports a duplicate key within the list', () => {
    expect(
      problemsOf([
        { key: 'a', label: 'A', type: 'text' },
        { key: 'b', label: 'B', type: 'text' },
        { key: 'a', label: 'A again', type: 'longtext' },
      ]),
    ).toEqual([{ item: 'a', field: 'key', message: 'duplicate item key "a"' }]);
  });

  it('reports a key that already exists on the intake', () => {
    expect(problemsOf([{ key: 'logo', label: 'Logo', type: 'image' }], ['brief', 'logo'])).toEqual([
      { item: 'logo', field: 'key', message: 'duplicate item key "logo"' },
    ]);
    expect(problemsOf([{ key: 'logo', label: 'Logo', type: 'image' }], ['brief'])).toEqual([]);
  });

  it('reports an unknown type and checks nothing else on that item', () => {
    expect(
      problemsOf([
        { key: 'a', label: 'A', type: 'picture', constraints: { formats: ['bmp'], max_chars: 3 } },
      ]),
    ).toEqual([
      { item: 'a', field: 'type', message: `unknown type "picture"; use one of ${ITEM_TYPES.join(', ')}` },
    ]);
  });

  it('reports an unknown format', () => {
    expect(
      problemsOf([{ key: 'a', label: 'A', type: 'file', constraints: { formats: ['pdf', 'bmp'] } }]),
    ).toEqual([
      { item: 'a', field: 'constraints.formats', message: `unknown format "bmp"; use ${FORMAT_LIST}` },
    ]);
  });

  it('does not take inherited object names for formats', () => {
    expect(
      problemsOf([{ key: 'a', label: 'A', type: 'file', constraints: { formats: ['constructor'] } }]),
    ).toEqual([
      {
        item: 'a',
        field: 'constraints.formats',
        message: `unknown format "constructor"; use ${FORMAT_LIST}`,
      },
    ]);
  });

  it('reports a non-image format on an image item, but allows it on a file item', () => {
    expect(
      problemsOf([{ key: 'a', label: 'A', type: 'image', constraints: { formats: ['png', 'pdf'] } }]),
    ).toEqual([
      {
        item: 'a',
        field: 'constraints.formats',
        message: '"pdf" is not an image format; use png, jpg, svg, heic, webp, gif or type file',
      },
    ]);
    expect(
      problemsOf([{ key: 'a', label: 'A', type: 'file', constraints: { formats: ['png', 'pdf'] } }]),
    ).toEqual([]);
  });

  it('accepts the aliases jpeg and heif (any case) on image items', () => {
    expect(
      problemsOf([
        { key: 'a', label: 'A', type: 'image', constraints: { formats: ['jpeg', 'HEIF', 'JPG'] } },
      ]),
    ).toEqual([]);
  });

  it('reports min_count greater than max_count', () => {
    expect(
      problemsOf([{ key: 'a', label: 'A', type: 'file_list', constraints: { min_count: 3, max_count: 1 } }]),
    ).toEqual([
      { item: 'a', field: 'constraints.min_count', message: 'min_count (3) is greater than max_count (1)' },
    ]);
  });

  it.each(['image', 'file'])('reports several files on a single-file %s item', (type) => {
    expect(problemsOf([{ key: 'a', label: 'A', type, constraints: { max_count: 2 } }])).toEqual([
      {
        item: 'a',
        field: 'constraints.max_count',
        message: `${type} items hold one file; use file_list for several`,
      },
    ]);
    expect(problemsOf([{ key: 'a', label: 'A', type, constraints: { min_count: 2 } }])).toEqual([
      {
        item: 'a',
        field: 'constraints.min_count',
        message: `${type} items hold one file; use file_list for several`,
      },
    ]);
    expect(problemsOf([{ key: 'a', label: 'A', type, constraints: { min_count: 1, max_count: 1 } }])).toEqual(
      [],
    );
  });

  it('reports constraints that do not apply to the type', () => {
    expect(
      problemsOf([
        { key: 'a', label: 'A', type: 'text', constraints: { min_width: 10 } },
        { key: 'b', label: 'B', type: 'longtext', constraints: { pattern: 'x' } },
        { key: 'c', label: 'C', type: 'email', constraints: { max_chars: 10 } },
        { key: 'd', label: 'D', type: 'date', constraints: { min: 1 } },
        {
          key: 'e',
          label: 'E',
          type: 'structured',
          schema: { type: 'object' },
          constraints: { max_chars: 1 },
        },
        { key: 'f', label: 'F', type: 'number', constraints: { max_count: 3 } },
      ]),
    ).toEqual([
      { item: 'a', field: 'constraints.min_width', message: 'min_width does not apply to text items' },
      { item: 'b', field: 'constraints.pattern', message: 'pattern does not apply to longtext items' },
      { item: 'c', field: 'constraints.max_chars', message: 'max_chars does not apply to email items' },
      { item: 'd', field: 'constraints.min', message: 'min does not apply to date items' },
      { item: 'e', field: 'constraints.max_chars', message: 'max_chars does not apply to structured items' },
      { item: 'f', field: 'constraints.max_count', message: 'max_count does not apply to number items' },
    ]);
  });

  it('reports min_chars greater than max_chars', () => {
    expect(
      problemsOf([{ key: 'a', label: 'A', type: 'text', constraints: { min_chars: 11, max_chars: 10 } }]),
    ).toEqual([
      { item: 'a', field: 'constraints.min_chars', message: 'min_chars (11) is greater than max_chars (10)' },
    ]);
  });

  it('reports min greater than max', () => {
    expect(problemsOf([{ key: 'a', label: 'A', type: 'number', constraints: { min: 5, max: -5 } }])).toEqual([
      { item: 'a', field: 'constraints.min', message: 'min (5) is greater than max (-5)' },
    ]);
  });

  it('reports an integer item with no whole number between min and max', () => {
    expect(
      problemsOf([
        { key: 'a', label: 'A', type: 'number', constraints: { min: 1.2, max: 1.8, integer: true } },
      ]),
    ).toEqual([
      {
        item: 'a',
        field: 'constraints.integer',
        message: 'no whole number lies between min (1.2) and max (1.8)',
      },
    ]);
    expect(
      problemsOf([
        { key: 'a', label: 'A', type: 'number', constraints: { min: 1.2, max: 2, integer: true } },
      ]),
    ).toEqual([]);
    expect(
      problemsOf([{ key: 'a', label: 'A', type: 'number', constraints: { min: 1.2, max: 1.8 } }]),
    ).toEqual([]);
  });

  it('reports min_date after max_date', () => {
    expect(
      problemsOf([
        {
          key: 'a',
          label: 'A',
          type: 'date',
          constraints: { min_date: '2026-02-01', max_date: '2026-01-31' },
        },
      ]),
    ).toEqual([
      {
        item: 'a',
        field: 'constraints.min_date',
        message: 'min_date (2026-02-01) is after max_date (2026-01-31)',
      },
    ]);
  });

  it('reports a pattern that is not a valid regular expression (unicode mode)', () => {
    expect(problemsOf([{ key: 'a', label: 'A', type: 'text', constraints: { pattern: '([a-z' } }])).toEqual([
      { item: 'a', field: 'constraints.pattern', message: 'pattern is not a valid regular expression' },
    ]);
    // Valid without the u flag, invalid with it: the check must use the flag the value check uses.
    expect(problemsOf([{ key: 'a', label: 'A', type: 'text', constraints: { pattern: '\\-' } }])).toEqual([
      { item: 'a', field: 'constraints.pattern', message: 'pattern is not a valid regular expression' },
    ]);
  });

  it('reports a structured item without a schema', () => {
    expect(problemsOf([{ key: 'a', label: 'A', type: 'structured' }])).toEqual([
      { item: 'a', field: 'schema', message: 'structured items need a schema (a JSON Schema object)' },
    ]);
  });

  it('reports a structured item with an invalid JSON Schema, with the compiler message', () => {
    const problems = problemsOf([{ key: 'a', label: 'A', type: 'structured', schema: { type: 'objekt' } }]);
    expect(problems).toHaveLength(1);
    expect(problems[0]?.item).toBe('a');
    expect(problems[0]?.field).toBe('schema');
    expect(problems[0]?.message).toMatch(
      /^schema is not a valid JSON Schema: schema is invalid: data\/type /,
    );
  });

  it('passes the schema to the injected compiler', () => {
    const seen: unknown[] = [];
    const problems = definitionProblems(
      [def({ key: 'a', label: 'A', type: 'structured', schema: { type: 'object' } })],
      (schema) => {
        seen.push(schema);
        return 'nope';
      },
    );
    expect(seen).toEqual([{ type: 'object' }]);
    expect(problems).toEqual([
      { item: 'a', field: 'schema', message: 'schema is not a valid JSON Schema: nope' },
    ]);
  });

  it('reports a schema on a non-structured item', () => {
    expect(problemsOf([{ key: 'a', label: 'A', type: 'text', schema: { type: 'string' } }])).toEqual([
      { item: 'a', field: 'schema', message: 'schema applies only to structured items' },
    ]);
  });

  it.each(['select', 'multiselect'])('reports a %s item without options', (type) => {
    expect(problemsOf([{ key: 'a', label: 'A', type }])).toEqual([
      { item: 'a', field: 'options', message: `${type} items need options` },
    ]);
    expect(problemsOf([{ key: 'a', label: 'A', type, options: [] }])).toEqual([
      { item: 'a', field: 'options', message: `${type} items need options` },
    ]);
  });

  it('reports duplicate option values', () => {
    expect(
      problemsOf([
        {
          key: 'a',
          label: 'A',
          type: 'select',
          options: [
            { value: 'x', label: 'X' },
            { value: 'x', label: 'Also X' },
          ],
        },
      ]),
    ).toEqual([{ item: 'a', field: 'options', message: 'option values must be unique' }]);
  });

  it('reports a multiselect min_count above the number of options', () => {
    expect(
      problemsOf([
        {
          key: 'a',
          label: 'A',
          type: 'multiselect',
          options: [{ value: 'x', label: 'X' }],
          constraints: { min_count: 2 },
        },
      ]),
    ).toEqual([
      { item: 'a', field: 'constraints.min_count', message: 'min_count (2) is more than the 1 options' },
    ]);
  });

  it('reports options on a non-select item', () => {
    expect(
      problemsOf([{ key: 'a', label: 'A', type: 'text', options: [{ value: 'x', label: 'X' }] }]),
    ).toEqual([
      { item: 'a', field: 'options', message: 'options apply only to select and multiselect items' },
    ]);
  });

  it('reports every problem of every item, in order', () => {
    const problems = problemsOf([
      { key: 'a', label: 'A', type: 'image', constraints: { formats: ['pdf'], max_chars: 3 } },
      { key: 'b', label: 'B', type: 'select' },
    ]);
    expect(problems.map((p) => `${p.item}.${p.field}`)).toEqual([
      'a.constraints.max_chars',
      'a.constraints.formats',
      'b.options',
    ]);
  });
});

describe('describeProblems', () => {
  it('joins problems as items.<key>.<field>: message', () => {
    expect(
      describeProblems([
        { item: 'a', field: 'type', message: 'bad' },
        { item: 'b', field: 'constraints.min', message: 'worse' },
      ]),
    ).toBe('items.a.type: bad; items.b.constraints.min: worse');
    expect(describeProblems([])).toBe('');
  });
});

describe('impossible combinations', () => {
  it('refuses a transparent background when only jpg is accepted', () => {
    const item = ItemDefinition.parse({
      key: 'logo',
      label: 'Logo',
      type: 'image',
      constraints: { formats: ['jpeg'], transparent_background: true },
    });
    expect(definitionProblems([item], compileJsonSchema)).toEqual([
      {
        item: 'logo',
        field: 'constraints.transparent_background',
        message: 'a transparent background is impossible in jpg; allow png, svg, webp or heic',
      },
    ]);
    const ok = ItemDefinition.parse({
      ...item,
      constraints: { formats: ['jpg', 'png'], transparent_background: true },
    });
    expect(definitionProblems([ok], compileJsonSchema)).toEqual([]);
  });
});
