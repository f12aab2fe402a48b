import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compileJsonSchema, validateJsonSchema } from '../lib/json-schema.js';
import { definitionProblems, FORMATS, ItemDefinition, type ItemDefinitionInput } from './items.js';
import { syntheticFilePlan, syntheticValue, valueForSchema } from './synthetic.js';
import { checkDraftValue, checkFile, checkSubmission } from './values.js';

const def = (input: Omit<ItemDefinitionInput, 'key' | 'label'>): ItemDefinition =>
  ItemDefinition.parse({ key: 'item', label: 'Item', ...input });
const submission = (d: ItemDefinition, value: unknown) =>
  checkSubmission(d, { value, fileCount: 0 }, validateJsonSchema);
const PASS = { ok: true, value: null };

/** The synthetic value of a sound definition must pass both the draft save and the submission. */
function expectSyntheticPasses(d: ItemDefinition) {
  expect(definitionProblems([d], compileJsonSchema)).toEqual([]);
  const value = syntheticValue(d);
  expect(checkDraftValue(d, value, validateJsonSchema)).toMatchObject({ ok: true });
  expect(submission(d, value)).toEqual(PASS);
  return value;
}

const OPTIONS = [
  { value: 'small', label: 'Small' },
  { value: 'medium', label: 'Medium' },
  { value: 'large', label: 'Large' },
];

describe('syntheticValue: each value type', () => {
  it.each<[string, Omit<ItemDefinitionInput, 'key' | 'label'>, unknown]>([
    [
      'text',
      { type: 'text' },
      'Synthetic answer from test mode. Lorem ipsum dolor sit amet, consectetur adipisc',
    ],
    ['text 5..10 chars', { type: 'text', constraints: { min_chars: 5, max_chars: 10 } }, 'Synthetic '],
    ['text max 3', { type: 'text', constraints: { max_chars: 3 } }, 'Syn'],
    ['secret', { type: 'secret' }, 'test-secret-value'],
    ['secret max 8', { type: 'secret', constraints: { max_chars: 8 } }, 'Syntheti'],
    ['url', { type: 'url' }, 'https://example.com'],
    ['url max 12', { type: 'url', constraints: { max_chars: 12 } }, 'https://a.co'],
    ['url max 8', { type: 'url', constraints: { max_chars: 8 } }, 'http://a'],
    ['email', { type: 'email' }, 'client@example.com'],
    ['phone', { type: 'phone' }, '+14155550123'],
    ['date', { type: 'date' }, '2026-01-15'],
    ['date min', { type: 'date', constraints: { min_date: '2030-06-01' } }, '2030-06-01'],
    ['date max', { type: 'date', constraints: { max_date: '2020-06-01' } }, '2020-06-01'],
    ['boolean', { type: 'boolean' }, true],
    ['number', { type: 'number' }, 1],
    ['number min', { type: 'number', constraints: { min: 5.5, max: 9 } }, 5.5],
    ['number max', { type: 'number', constraints: { max: -3 } }, -3],
    ['integer min 1.5', { type: 'number', constraints: { min: 1.5, max: 10, integer: true } }, 2],
    ['integer max 2.5', { type: 'number', constraints: { max: 2.5, integer: true } }, 2],
    ['integer min -2.5', { type: 'number', constraints: { min: -2.5, integer: true } }, -2],
    ['select', { type: 'select', options: OPTIONS }, 'small'],
    ['multiselect', { type: 'multiselect', options: OPTIONS }, ['small']],
    [
      'multiselect min 2',
      { type: 'multiselect', options: OPTIONS, constraints: { min_count: 2, max_count: 2 } },
      ['small', 'medium'],
    ],
    [
      'multiselect min 0',
      { type: 'multiselect', options: OPTIONS, constraints: { min_count: 0 } },
      ['small'],
    ],
    ['color_list', { type: 'color_list' }, ['#1a2b3c']],
    [
      'color_list min 3',
      { type: 'color_list', constraints: { min_count: 3 } },
      ['#1a2b3c', '#1a2b3d', '#1a2b3e'],
    ],
    [
      'structured default',
      { type: 'structured', schema: { type: 'object' } },
      { note: 'Synthetic answer from test mode. Lorem ipsum dolor sit amet, consectetur adipisc' },
    ],
  ])('%s', (_name, input, expected) => {
    const d = def(input);
    expect(expectSyntheticPasses(d)).toEqual(expected);
  });

  it('meets a long min_chars', () => {
    const d = def({ type: 'longtext', constraints: { min_chars: 500 } });
    const value = expectSyntheticPasses(d);
    expect(typeof value === 'string' && value.length).toBe(500);
  });

  it('meets a secret min_chars longer than its usual value', () => {
    const value = expectSyntheticPasses(
      def({ type: 'secret', constraints: { min_chars: 20, max_chars: 25 } }),
    );
    expect(typeof value === 'string' && value.length).toBe(25);
  });

  it('matches a text pattern when the sampler can (null otherwise) and gives null for file kinds', () => {
    expect(syntheticValue(def({ type: 'text', constraints: { pattern: '[0-9]+' } }))).toBe('0');
    expect(syntheticValue(def({ type: 'text', constraints: { pattern: '\\p{Script=Greek}+' } }))).toBeNull();
    expect(syntheticValue(def({ type: 'image' }))).toBeNull();
  });
});

describe('syntheticValue: structured schemas', () => {
  const schemas: Record<string, Record<string, unknown>> = {
    'flat object with required fields': {
      type: 'object',
      properties: { name: { type: 'string' }, age: { type: 'integer' }, ok: { type: 'boolean' } },
      required: ['name', 'age'],
      additionalProperties: false,
    },
    'nested objects and arrays': {
      type: 'object',
      properties: {
        company: {
          type: 'object',
          properties: {
            name: { type: 'string', minLength: 2, maxLength: 5 },
            address: {
              type: 'object',
              properties: { street: { type: 'string' }, zip: { type: 'string', minLength: 5, maxLength: 5 } },
              required: ['street', 'zip'],
            },
          },
          required: ['name', 'address'],
        },
        people: {
          type: 'array',
          minItems: 2,
          items: {
            type: 'object',
            properties: { email: { type: 'string', format: 'email' }, role: { enum: ['owner', 'staff'] } },
            required: ['email', 'role'],
          },
        },
      },
      required: ['company', 'people'],
    },
    'enums and const': {
      type: 'object',
      properties: {
        size: { type: 'string', enum: ['s', 'm', 'l'] },
        version: { const: 2 },
        level: { type: 'integer', enum: [3, 4] },
      },
      required: ['size', 'version', 'level'],
    },
    'string formats': {
      type: 'object',
      properties: {
        email: { type: 'string', format: 'email' },
        date: { type: 'string', format: 'date' },
        when: { type: 'string', format: 'date-time' },
        time: { type: 'string', format: 'time' },
        site: { type: 'string', format: 'uri' },
        ref: { type: 'string', format: 'uri-reference' },
        host: { type: 'string', format: 'hostname' },
        ip4: { type: 'string', format: 'ipv4' },
        ip6: { type: 'string', format: 'ipv6' },
        id: { type: 'string', format: 'uuid' },
        length: { type: 'string', format: 'duration' },
        re: { type: 'string', format: 'regex' },
        pointer: { type: 'string', format: 'json-pointer' },
        bytes: { type: 'string', format: 'byte' },
      },
      required: ['email', 'date', 'when', 'time', 'site', 'ref', 'host', 'ip4', 'ip6', 'id', 'length'],
    },
    'numeric bounds': {
      type: 'object',
      properties: {
        min: { type: 'integer', minimum: 18 },
        max: { type: 'integer', maximum: 0 },
        exclusive: { type: 'number', exclusiveMinimum: 0, exclusiveMaximum: 1 },
        exclusiveInteger: { type: 'integer', exclusiveMinimum: 5, exclusiveMaximum: 7 },
        fraction: { type: 'integer', minimum: 2.5 },
        multiple: { type: 'integer', minimum: 7, multipleOf: 5 },
        price: { type: 'number', minimum: 0.01, multipleOf: 0.25 },
        upperOnly: { type: 'number', exclusiveMaximum: -10 },
      },
      required: ['min', 'max', 'exclusive', 'exclusiveInteger', 'fraction', 'multiple', 'price', 'upperOnly'],
    },
    'array bounds and unique items': {
      type: 'object',
      properties: {
        tags: { type: 'array', items: { type: 'string' }, minItems: 3, uniqueItems: true },
        ids: { type: 'array', items: { type: 'integer', minimum: 1 }, minItems: 4, uniqueItems: true },
        picks: {
          type: 'array',
          items: { enum: ['a', 'b', 'c'] },
          minItems: 3,
          maxItems: 3,
          uniqueItems: true,
        },
        emails: { type: 'array', items: { type: 'string', format: 'email' }, minItems: 2, uniqueItems: true },
        rows: {
          type: 'array',
          minItems: 2,
          maxItems: 50,
          uniqueItems: true,
          items: {
            type: 'object',
            properties: { label: { type: 'string', maxLength: 3 } },
            required: ['label'],
          },
        },
        none: { type: 'array', items: { type: 'string' }, maxItems: 0 },
      },
      required: ['tags', 'ids', 'picks', 'emails', 'rows', 'none'],
    },
    'short and empty strings': {
      type: 'object',
      properties: { code: { type: 'string', maxLength: 2 }, blank: { type: 'string', maxLength: 0 } },
      required: ['code', 'blank'],
    },
    'required name without a property schema': {
      type: 'object',
      required: ['note'],
      additionalProperties: { type: 'string', minLength: 3 },
    },
    'anyOf and nullable types': {
      type: 'object',
      properties: {
        either: { anyOf: [{ type: 'integer', minimum: 3 }, { type: 'string' }] },
        maybe: { type: ['string', 'null'] },
      },
      required: ['either', 'maybe'],
    },
    'top-level array': { type: 'array', items: { type: 'number', minimum: -1 }, minItems: 1 },
  };

  it.each(Object.entries(schemas))('%s', (_name, schema) => {
    expectSyntheticPasses(def({ type: 'structured', schema }));
  });

  it('fills a nested object with concrete values', () => {
    const schema = schemas['nested objects and arrays'];
    expect(schema && valueForSchema(schema)).toEqual({
      company: { name: 'Synth', address: { street: expect.any(String) as unknown, zip: 'Synth' } },
      people: [
        { email: 'client@example.com', role: 'owner' },
        { email: 'client1@example.com', role: 'staff' },
      ],
    });
  });

  it('respects numeric bounds with concrete values', () => {
    const schema = schemas['numeric bounds'];
    expect(schema && valueForSchema(schema)).toEqual({
      min: 18,
      max: 0,
      exclusive: 0.5,
      exclusiveInteger: 6,
      fraction: 3,
      multiple: 10,
      price: 0.25,
      upperOnly: -11,
    });
  });

  it('makes the items of a uniqueItems array differ', () => {
    const schema = schemas['array bounds and unique items'];
    expect(schema && valueForSchema(schema)).toMatchObject({
      ids: [1, 2, 3, 4],
      picks: ['a', 'b', 'c'],
      emails: ['client@example.com', 'client1@example.com'],
      rows: [{ label: 'Syn' }, { label: 'Sy1' }],
      none: [],
    });
  });

  it('returns const, the first enum value and the first example as they are', () => {
    expect(valueForSchema({ const: { a: 1 } })).toEqual({ a: 1 });
    expect(valueForSchema({ enum: [null, 'x'] })).toBeNull();
    expect(valueForSchema({ type: 'string', examples: ['ACME Ltd'] })).toBe('ACME Ltd');
  });

  it('stops at depth 8 instead of recursing forever', () => {
    let schema: Record<string, unknown> = { type: 'string' };
    for (let i = 0; i < 12; i++) schema = { type: 'object', properties: { next: schema } };
    let value = valueForSchema(schema);
    let depth = 0;
    while (typeof value === 'object' && value !== null && !Array.isArray(value) && 'next' in value) {
      value = value.next ?? null;
      depth++;
    }
    expect(depth).toBe(9);
    expect(value).toBeNull();
  });
});

describe('syntheticFilePlan', () => {
  const contentType = (format: keyof typeof FORMATS) => FORMATS[format][0];

  it.each<[string, Omit<ItemDefinitionInput, 'key' | 'label'>, ReturnType<typeof syntheticFilePlan>]>([
    ['image', { type: 'image' }, { format: 'png', count: 1, width: 64, transparent: false }],
    [
      'svg only',
      { type: 'image', constraints: { formats: ['svg'] } },
      { format: 'svg', count: 1, width: 64, transparent: false },
    ],
    [
      'webp before jpg',
      { type: 'image', constraints: { formats: ['jpeg', 'webp'] } },
      { format: 'webp', count: 1, width: 64, transparent: false },
    ],
    ['file', { type: 'file' }, { format: 'pdf', count: 1, width: 64, transparent: false }],
    [
      'docx only',
      { type: 'file', constraints: { formats: ['docx'] } },
      { format: 'docx', count: 1, width: 64, transparent: false },
    ],
    [
      'file_list with min_count',
      { type: 'file_list', constraints: { formats: ['pdf', 'png'], min_count: 3, max_count: 4 } },
      { format: 'png', count: 3, width: 64, transparent: false },
    ],
    [
      'large transparent logo',
      { type: 'image', constraints: { min_width: 2000, transparent_background: true } },
      { format: 'png', count: 1, width: 2000, transparent: true },
    ],
    [
      'tall image',
      { type: 'image', constraints: { min_width: 100, min_height: 3000 } },
      { format: 'png', count: 1, width: 3000, transparent: false },
    ],
  ])('%s', (_name, input, expected) => {
    const d = def(input);
    expect(definitionProblems([d], compileJsonSchema)).toEqual([]);
    const plan = syntheticFilePlan(d);
    expect(plan).toEqual(expected);
    // Files made to the plan (square, as synthetic files are) pass the upload and submission checks.
    for (let i = 0; i < plan.count; i++) {
      const facts = {
        format: plan.format,
        contentType: contentType(plan.format),
        bytes: 100,
        width: plan.width,
        height: plan.width,
        transparent: plan.transparent,
      };
      expect(checkFile(d, facts, i)).toEqual(PASS);
    }
    expect(checkSubmission(d, { value: undefined, fileCount: plan.count }, validateJsonSchema)).toEqual(PASS);
  });
});

/** Random sound definitions of the value types whose bounds interact. */
const isoDate = fc
  .integer({ min: Date.UTC(1990, 0, 1), max: Date.UTC(2100, 11, 31) })
  .map((t) => new Date(t).toISOString().slice(0, 10));
const optional = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined });
const countBounds = (most: number) =>
  fc
    .tuple(optional(fc.integer({ min: 0, max: most })), optional(fc.integer({ min: 1, max: 20 })))
    .map(([min, extra]) => ({
      min_count: min,
      max_count: extra === undefined ? undefined : Math.max(1, min ?? 0) + extra - 1,
    }));
const numberArb = fc.oneof(
  fc.integer({ min: -1000, max: 1000 }),
  fc.double({ min: -1000, max: 1000, noNaN: true, noDefaultInfinity: true }),
);

const definitionArb: fc.Arbitrary<ItemDefinitionInput> = fc.oneof(
  fc
    .record({
      type: fc.constantFrom('text', 'longtext', 'secret'),
      min: optional(fc.integer({ min: 0, max: 300 })),
      extra: optional(fc.integer({ min: 0, max: 300 })),
      required: fc.boolean(),
    })
    .map(({ type, min, extra, required }) => ({
      key: 'a',
      label: 'A',
      type,
      required,
      constraints: {
        min_chars: min,
        max_chars: extra === undefined ? undefined : Math.max(1, (min ?? 0) + extra),
      },
    })),
  fc
    .record({ a: optional(numberArb), b: optional(numberArb), integer: fc.boolean(), required: fc.boolean() })
    .filter(({ a, b, integer }) => {
      if (a === undefined || b === undefined) return true;
      const [lo, hi] = a <= b ? [a, b] : [b, a];
      return !integer || Math.ceil(lo) <= hi;
    })
    .map(({ a, b, integer, required }) => {
      const [min, max] = a !== undefined && b !== undefined && a > b ? [b, a] : [a, b];
      return { key: 'a', label: 'A', type: 'number', required, constraints: { min, max, integer } };
    }),
  fc
    .record({
      count: fc.integer({ min: 1, max: 8 }),
      required: fc.boolean(),
      type: fc.constantFrom('select', 'multiselect'),
    })
    .chain(({ count, required, type }) =>
      countBounds(count).map((bounds) => ({
        key: 'a',
        label: 'A',
        type,
        required,
        options: Array.from({ length: count }, (_, i) => ({ value: `opt_${i}`, label: `Option ${i}` })),
        constraints: type === 'multiselect' ? bounds : {},
      })),
    ),
  fc.record({ bounds: countBounds(10), required: fc.boolean() }).map(({ bounds, required }) => ({
    key: 'a',
    label: 'A',
    type: 'color_list',
    required,
    constraints: bounds,
  })),
  fc
    .record({ a: optional(isoDate), b: optional(isoDate), required: fc.boolean() })
    .map(({ a, b, required }) => {
      const [min_date, max_date] = a !== undefined && b !== undefined && a > b ? [b, a] : [a, b];
      return { key: 'a', label: 'A', type: 'date', required, constraints: { min_date, max_date } };
    }),
);

/** Strips undefined constraint values, as JSON (the API) would. */
const asJson = (input: ItemDefinitionInput): ItemDefinitionInput =>
  JSON.parse(JSON.stringify(input)) as ItemDefinitionInput;

describe('syntheticValue: property', () => {
  it('passes the draft and submission checks for random sound definitions', () => {
    fc.assert(
      fc.property(definitionArb, (input) => {
        const d = ItemDefinition.parse(asJson(input));
        expect(definitionProblems([d], compileJsonSchema)).toEqual([]);
        const value = syntheticValue(d);
        expect(checkDraftValue(d, value, validateJsonSchema)).toMatchObject({ ok: true });
        expect(submission(d, value)).toEqual(PASS);
      }),
      { numRuns: 500 },
    );
  });
});

/** Random satisfiable JSON Schemas. Unique arrays only get items that have many distinct values. */
type Schema = Record<string, unknown>;
const stringSchema = fc
  .record({
    min: optional(fc.integer({ min: 0, max: 20 })),
    extra: optional(fc.integer({ min: 0, max: 20 })),
  })
  .map(({ min, extra }): Schema => {
    const schema: Schema = { type: 'string' };
    if (min !== undefined) schema.minLength = min;
    if (extra !== undefined) schema.maxLength = Math.max(1, (min ?? 0) + extra);
    return schema;
  });
const formatSchema = fc
  .constantFrom('email', 'date', 'date-time', 'time', 'uri', 'hostname', 'ipv4', 'ipv6', 'uuid', 'duration')
  .map((format): Schema => ({ type: 'string', format }));
const numericSchema = fc
  .record({
    integer: fc.boolean(),
    k: fc.integer({ min: -50, max: 50 }),
    step: fc.constantFrom(undefined, 1, 2, 5, 0.5, 0.25),
    below: optional(fc.tuple(fc.integer({ min: 0, max: 20 }), fc.boolean())),
    above: optional(fc.tuple(fc.integer({ min: 0, max: 20 }), fc.boolean())),
  })
  .map(({ integer, k, step, below, above }): Schema => {
    // A value known to be allowed (`centre`), and bounds placed around it.
    const unit = integer ? Math.max(1, Math.ceil(step ?? 1)) : (step ?? 0.5);
    const centre = k * unit;
    const schema: Schema = { type: integer ? 'integer' : 'number' };
    if (step !== undefined) schema.multipleOf = integer ? unit : step;
    if (below) schema[below[1] ? 'exclusiveMinimum' : 'minimum'] = centre - below[0] - (below[1] ? 0.5 : 0);
    if (above) schema[above[1] ? 'exclusiveMaximum' : 'maximum'] = centre + above[0] + (above[1] ? 0.5 : 0);
    return schema;
  });
const enumSchema = fc
  .uniqueArray(fc.string({ minLength: 1, maxLength: 5 }), { minLength: 1, maxLength: 4 })
  .map((values): Schema => ({ enum: values }));
const uniqueFriendly = fc.oneof(
  stringSchema,
  formatSchema,
  fc.integer({ min: -100, max: 100 }).map((minimum): Schema => ({ type: 'integer', minimum })),
  stringSchema.map((label): Schema => ({ type: 'object', properties: { label }, required: ['label'] })),
);

const { schema: schemaArb } = fc.letrec<{ schema: Schema; leaf: Schema; object: Schema; array: Schema }>(
  (tie) => ({
    leaf: fc.oneof(
      stringSchema,
      formatSchema,
      numericSchema,
      enumSchema,
      fc.constant<Schema>({ type: 'boolean' }),
      fc.constant<Schema>({ type: 'null' }),
    ),
    object: fc
      .dictionary(fc.stringMatching(/^[a-z]{1,6}$/), tie('schema'), { maxKeys: 4 })
      .chain((properties) =>
        fc
          .subarray(Object.keys(properties))
          .map((required): Schema => ({ type: 'object', properties, required, additionalProperties: false })),
      ),
    array: fc.oneof(
      fc
        .record({ items: tie('schema'), min: fc.integer({ min: 0, max: 3 }), extra: optional(fc.nat(3)) })
        .map(({ items, min, extra }): Schema => {
          const schema: Schema = { type: 'array', items, minItems: min };
          if (extra !== undefined) schema.maxItems = Math.max(1, min + extra);
          return schema;
        }),
      fc
        .record({ items: uniqueFriendly, min: fc.integer({ min: 2, max: 5 }) })
        // uniqueItems over objects must be bounded (every pair is compared), so these carry maxItems.
        .map(({ items, min }): Schema => ({
          type: 'array',
          items,
          minItems: min,
          maxItems: 50,
          uniqueItems: true,
        })),
    ),
    schema: fc.oneof({ depthSize: 'small', withCrossShrink: true }, tie('leaf'), tie('object'), tie('array')),
  }),
);

describe('valueForSchema: property', () => {
  it('produces a valid value for random satisfiable schemas', () => {
    fc.assert(
      fc.property(schemaArb, (schema) => {
        expect(compileJsonSchema(schema)).toBeUndefined();
        expect(validateJsonSchema(schema, valueForSchema(schema))).toBeUndefined();
      }),
      { numRuns: 500 },
    );
  });
});
